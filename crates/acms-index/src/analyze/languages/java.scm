; Java: classes, records, interfaces, annotation types, enums, methods and constructors;
; the package; imports (a single type, or a package with `.*`); calls, `new`, extended and
; implemented types. Type uses and capitalized names (a constant or a class read as a
; value) are the table's `type_idents` and `idents`: as patterns they cost a fifth of the pass.

(class_declaration name: (identifier) @name) @definition.class
(record_declaration name: (identifier) @name) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(annotation_type_declaration name: (identifier) @name) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(method_declaration name: (identifier) @name) @definition.function
(constructor_declaration name: (identifier) @name) @definition.function
(compact_constructor_declaration name: (identifier) @name) @definition.function
; A field holding an anonymous class (`static final TypeAdapter<Boolean> BOOLEAN = new
; TypeAdapter<Boolean>() {…}`, gson's adapters): a class named by the field, so its methods
; are `BOOLEAN.read`, not one of forty `read`s of the enclosing class.
(field_declaration
  declarator: (variable_declarator
    name: (identifier) @name
    value: (object_creation_expression (class_body) @body))) @definition.class

(package_declaration [(scoped_identifier) (identifier)] @name) @package

(class_body (field_declaration) @field)
(interface_body (constant_declaration) @field)
(enum_body_declarations (field_declaration) @field)
(annotation_type_body (constant_declaration) @field)

(import_declaration (scoped_identifier name: (identifier) @import.name) @import.module .) @import
(import_declaration [(scoped_identifier) (identifier)] @import.module (asterisk)) @import

(superclass [(type_identifier) @reference.inherit
             (generic_type (type_identifier) @reference.inherit)
             (scoped_type_identifier (type_identifier) @reference.inherit .)
             (generic_type (scoped_type_identifier (type_identifier) @reference.inherit .))])
(type_list [(type_identifier) @reference.inherit
            (generic_type (type_identifier) @reference.inherit)
            (scoped_type_identifier (type_identifier) @reference.inherit .)
            (generic_type (scoped_type_identifier (type_identifier) @reference.inherit .))])
