; C: function definitions and prototypes, structs, unions, enums, typedefs, function-like
; macros; #include; calls and type uses.

(function_definition
  declarator: [(function_declarator declarator: (identifier) @name)
               (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
               (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))]) @definition.function

(declaration
  declarator: [(function_declarator declarator: (identifier) @name)
               (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
               (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))]) @definition.function

(struct_specifier name: (type_identifier) @name body: (_) @body) @definition.struct
(union_specifier name: (type_identifier) @name body: (_) @body) @definition.struct
(enum_specifier name: (type_identifier) @name body: (_) @body) @definition.enum
(type_definition type: (struct_specifier !name body: (_) @body) declarator: (type_identifier) @name) @definition.struct
(type_definition type: (union_specifier !name body: (_) @body) declarator: (type_identifier) @name) @definition.struct
(type_definition type: (enum_specifier !name body: (_) @body) declarator: (type_identifier) @name) @definition.enum
(type_definition type: [(primitive_type) (type_identifier) (sized_type_specifier)] declarator: (type_identifier) @name) @definition.type
(type_definition type: [(struct_specifier !body) (union_specifier !body) (enum_specifier !body)] declarator: (type_identifier) @name) @definition.type

(preproc_function_def name: (identifier) @name) @definition.function

(preproc_def) @field
(declaration) @field
(field_declaration_list (field_declaration) @field)
(enumerator_list (enumerator) @field)

(preproc_include path: (_) @import.module) @import

(call_expression function: [(identifier) @reference.call
                            (field_expression field: (field_identifier) @reference.call)])
(type_identifier) @reference.type
