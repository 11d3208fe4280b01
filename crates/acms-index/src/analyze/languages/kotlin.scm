; Kotlin: classes, interfaces, enum classes, objects, functions (methods inside a class),
; properties with block accessors, type aliases; the package; imports; calls, supertypes
; and type uses.
; Earlier patterns win when two match one node.

(class_declaration "interface" name: (identifier) @name (class_body)? @body) @definition.interface
(class_declaration name: (identifier) @name (enum_class_body) @body) @definition.enum
(class_declaration name: (identifier) @name (class_body)? @body) @definition.class
(object_declaration name: (identifier) @name (class_body)? @body) @definition.class
(function_declaration name: (identifier) @name (function_body)? @body) @definition.function
(type_alias type: (identifier) @name) @definition.type
; A property whose getter or setter has a block is code, read like a method (its accessors
; are its body); other properties stay field lines.
(property_declaration (variable_declaration (identifier) @name)
  [(getter (function_body (block))) (setter (function_body (block)))] @body) @definition.function

(package_header (qualified_identifier) @name) @package

(class_body (property_declaration) @field)
(enum_class_body (enum_entry) @field)

(import [(qualified_identifier) (identifier)] @import.module) @import

(call_expression (identifier) @reference.call)
(call_expression (navigation_expression (identifier) @reference.call .))
(delegation_specifier (user_type (identifier) @reference.inherit))
(delegation_specifier (constructor_invocation (user_type (identifier) @reference.inherit)))
(user_type (identifier) @reference.type)
