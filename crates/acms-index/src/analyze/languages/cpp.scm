; C++: everything C has, plus classes, namespaces (as name scopes), methods defined in their
; class or outside it (`void A::f()`, owned by A), templates, base classes.

(function_definition
  declarator: [(function_declarator declarator: [(identifier) (field_identifier) (destructor_name) (operator_name)] @name)
               (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier)] @name))
               (reference_declarator (function_declarator declarator: [(identifier) (field_identifier) (operator_name)] @name))]) @definition.function

(function_definition
  declarator: [(function_declarator declarator: (qualified_identifier scope: (_) @owner name: [(identifier) (destructor_name) (operator_name) (field_identifier)] @name))
               (pointer_declarator declarator: (function_declarator declarator: (qualified_identifier scope: (_) @owner name: [(identifier) (operator_name)] @name)))
               (reference_declarator (function_declarator declarator: (qualified_identifier scope: (_) @owner name: [(identifier) (operator_name)] @name)))
               (function_declarator declarator: (qualified_identifier name: (qualified_identifier scope: (_) @owner name: [(identifier) (destructor_name) (operator_name)] @name)))]) @definition.method

(declaration
  declarator: [(function_declarator declarator: (identifier) @name)
               (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))]) @definition.function

(field_declaration
  declarator: [(function_declarator declarator: [(field_identifier) (destructor_name) (operator_name)] @name)
               (pointer_declarator declarator: (function_declarator declarator: (field_identifier) @name))
               (reference_declarator (function_declarator declarator: [(field_identifier) (operator_name)] @name))]) @definition.method

(class_specifier name: [(type_identifier) (template_type name: (type_identifier))] @name body: (_) @body) @definition.class
(struct_specifier name: [(type_identifier) (template_type name: (type_identifier))] @name body: (_) @body) @definition.struct
(union_specifier name: (type_identifier) @name body: (_) @body) @definition.struct
(enum_specifier name: (type_identifier) @name body: (_) @body) @definition.enum
(type_definition type: (struct_specifier !name body: (_) @body) declarator: (type_identifier) @name) @definition.struct
(type_definition type: (enum_specifier !name body: (_) @body) declarator: (type_identifier) @name) @definition.enum
(type_definition type: [(primitive_type) (type_identifier) (sized_type_specifier) (qualified_identifier) (template_type)] declarator: (type_identifier) @name) @definition.type
(alias_declaration name: (type_identifier) @name) @definition.type

(preproc_function_def name: (identifier) @name) @definition.function

(namespace_definition name: [(namespace_identifier) (nested_namespace_specifier)] @name body: (_)) @scope

(preproc_def) @field
(declaration) @field
(field_declaration_list (field_declaration) @field)
(field_declaration_list (access_specifier) @field)
(enumerator_list (enumerator) @field)

(preproc_include path: (_) @import.module) @import

(call_expression function: [(identifier) @reference.call
                            (field_expression field: (field_identifier) @reference.call)
                            (qualified_identifier name: (identifier) @reference.call)
                            (template_function name: (identifier) @reference.call)])
(base_class_clause [(type_identifier) @reference.inherit
                    (qualified_identifier name: (type_identifier) @reference.inherit)
                    (template_type name: (type_identifier) @reference.inherit)])
(new_expression type: (type_identifier) @reference.call)
(type_identifier) @reference.type
