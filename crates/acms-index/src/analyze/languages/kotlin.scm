; Kotlin: classes, interfaces, enum classes, objects, functions (methods inside a class),
; type aliases; the package; imports; calls, supertypes and type uses.
; Earlier patterns win when two match one node.

(class_declaration "interface" name: (identifier) @name (class_body)? @body) @definition.interface
(class_declaration name: (identifier) @name (enum_class_body) @body) @definition.enum
(class_declaration name: (identifier) @name (class_body)? @body) @definition.class
(object_declaration name: (identifier) @name (class_body)? @body) @definition.class
(function_declaration name: (identifier) @name (function_body)? @body) @definition.function
(type_alias type: (identifier) @name) @definition.type

(package_header (qualified_identifier) @name) @package

(class_body (property_declaration) @field)
(enum_class_body (enum_entry) @field)

(import [(qualified_identifier) (identifier)] @import.module) @import

(call_expression (identifier) @reference.call)
(call_expression (navigation_expression (identifier) @reference.call .))
(delegation_specifier (user_type (identifier) @reference.inherit))
(delegation_specifier (constructor_invocation (user_type (identifier) @reference.inherit)))
(user_type (identifier) @reference.type)
