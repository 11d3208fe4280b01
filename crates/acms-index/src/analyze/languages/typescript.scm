; TypeScript, TSX and JavaScript (one query, compiled for each grammar): declared functions,
; methods, classes, interfaces, enums and type aliases; `export default class {}`; ES imports
; and `export … from`; bases; class fields and the module's top-level declarations.
; What a query cannot say stays in typescript.rs's `classify`: a function behind casts,
; guards and wrapper calls (nesting of any depth), test blocks named by their title's text,
; and overloads (a declaration is no node when the next names it again). What a query says
; at a cost stays there too: patterns rooted at every call (`require("x")`, `import("x")`,
; `memo(function Button() {})`) cost 7 % of the pass, so its `import` and `classify` hooks
; answer them.

(function_declaration name: (_) @name) @definition.function
(generator_function_declaration name: (_) @name) @definition.function
(method_definition name: (_) @name) @definition.function
(class_declaration name: (_) @name) @definition.class
(abstract_class_declaration name: (_) @name) @definition.class
(interface_declaration name: (_) @name) @definition.interface
(enum_declaration name: (_) @name) @definition.enum
; A long alias is signed by its header (`type X<T> =`) and elided; a short one is all signature.
(type_alias_declaration name: (_) @name value: (_) @body) @definition.type
(export_statement value: (class name: (_) @name) @definition.class)
(export_statement "default" @name value: (class !name) @definition.class)

(program [(lexical_declaration) (variable_declaration) (export_statement)] @field)
(class_declaration body: (class_body (public_field_definition) @field))
(abstract_class_declaration body: (class_body (public_field_definition) @field))
(export_statement value: (class body: (class_body (public_field_definition) @field)))

(import_statement (import_clause (identifier) @import.name) source: (string) @import.module) @import
(import_statement (import_clause (namespace_import (identifier) @import.name)) source: (string) @import.module) @import
(import_statement
  (import_clause (named_imports (import_specifier name: (_) @import.name)))
  source: (string) @import.module) @import
(import_statement source: (string) @import.module) @import
(export_statement (export_clause (export_specifier name: (_) @import.name)) source: (string) @import.module) @import
(export_statement source: (string) @import.module) @import
(class_heritage (extends_clause value: (_) @reference.inherit.head))
(class_heritage (implements_clause (_) @reference.inherit.head))
(interface_declaration (extends_type_clause type: (_) @reference.inherit.head))
