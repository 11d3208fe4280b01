; Scala: classes, objects, traits, enums, methods, type definitions; the package (a block
; `package a { … }` is a name scope); imports (their path segments joined); calls,
; `new`, extended types and type uses. Earlier patterns win when two match one node.

(class_definition name: (identifier) @name) @definition.class
(object_definition name: (identifier) @name) @definition.class
(trait_definition name: (identifier) @name) @definition.trait
(enum_definition name: (identifier) @name) @definition.enum
(function_definition name: (identifier) @name) @definition.function
(function_declaration name: (identifier) @name) @definition.function
(type_definition name: (type_identifier) @name) @definition.type

(package_clause name: (package_identifier) @name body: (_)) @scope
(package_clause name: (package_identifier) @name !body) @package

(template_body (val_definition) @field)
(template_body (var_definition) @field)
(template_body (val_declaration) @field)

(import_declaration) @import.statement

(call_expression function: (identifier) @reference.call)
(call_expression function: (field_expression field: (identifier) @reference.call))
(instance_expression (type_identifier) @reference.call)
(extends_clause (type_identifier) @reference.inherit)
(extends_clause (generic_type type: (type_identifier) @reference.inherit))
(type_identifier) @reference.type
