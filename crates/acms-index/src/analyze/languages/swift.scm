; Swift: classes, structs, enums, actors, extensions (named after the type they extend, so
; its members join it), protocols, functions, initializers, computed properties, type
; aliases; imports; calls, inheritance and conformance, type uses. Earlier patterns win
; when two match one node.

(class_declaration declaration_kind: "struct" name: (type_identifier) @name) @definition.struct
(class_declaration declaration_kind: "enum" name: (type_identifier) @name) @definition.enum
(class_declaration declaration_kind: "extension" name: (user_type (type_identifier) @name)) @definition.impl
(class_declaration name: (type_identifier) @name) @definition.class
(protocol_declaration name: (type_identifier) @name) @definition.interface
(function_declaration name: (simple_identifier) @name) @definition.function
(protocol_function_declaration name: (simple_identifier) @name) @definition.method
(init_declaration name: "init" @name) @definition.method
(typealias_declaration name: (type_identifier) @name) @definition.type
; A computed property is code, read like a method; a stored one stays a field line.
(property_declaration name: (pattern (simple_identifier) @name)
  computed_value: (computed_property) @body) @definition.function

(class_body (property_declaration) @field)
(enum_class_body (enum_entry) @field)
(protocol_body (protocol_property_declaration) @field)

(import_declaration (identifier) @import.module) @import

(call_expression (simple_identifier) @reference.call)
(call_expression (navigation_expression suffix: (navigation_suffix suffix: (simple_identifier) @reference.call)))
(inheritance_specifier inherits_from: (user_type (type_identifier) @reference.inherit))
(user_type (type_identifier) @reference.type)
