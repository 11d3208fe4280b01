; C#: classes, structs, records, interfaces, enums, methods, constructors, properties with
; code; namespaces (block ones as name scopes, file-scoped ones as the package); using
; directives; calls, `new`, type uses and base types. Partial classes share one qualified
; name across files.

(class_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(struct_declaration name: (identifier) @name) @definition.struct
(interface_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(method_declaration name: (identifier) @name) @definition.method
(constructor_declaration name: (identifier) @name) @definition.method
(local_function_statement name: (identifier) @name) @definition.function
(delegate_declaration name: (identifier) @name) @definition.type
; A property with a block in an accessor is read like a method; an auto-property
; (`{ get; set; }`) and a `=>` one stay field lines (as methods they crowded the budget).
(property_declaration name: (identifier) @name
  accessors: (accessor_list (accessor_declaration body: (block))) @body) @definition.method

(namespace_declaration name: (_) @name body: (_)) @scope
(file_scoped_namespace_declaration name: (_) @name) @package

(declaration_list (field_declaration) @field)
(declaration_list (property_declaration) @field)
(declaration_list (event_field_declaration) @field)
(enum_member_declaration_list (enum_member_declaration) @field)

(using_directive [(qualified_name) (identifier)] @import.module) @import

(invocation_expression function: [(identifier) @reference.call
                                  (generic_name (identifier) @reference.call)
                                  (member_access_expression name: [(identifier) @reference.call
                                                                   (generic_name (identifier) @reference.call)])])
(object_creation_expression type: [(identifier) @reference.call
                                   (generic_name (identifier) @reference.call)
                                   (qualified_name name: (identifier) @reference.call)])
(base_list [(identifier) @reference.inherit
            (generic_name (identifier) @reference.inherit)
            (qualified_name name: (identifier) @reference.inherit)])
(type_argument_list (identifier) @reference.type)
(variable_declaration type: (identifier) @reference.type)
(parameter type: (identifier) @reference.type)
