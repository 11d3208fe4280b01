; Python: classes and functions (decorated and async included: a decorated definition is the
; node, so its decorators are in its span, signature and references), module-level constants,
; imports, base classes, class attributes and module-level assignments. Calls and capitalized
; names are the table's `calls` and `idents`.

(decorated_definition definition: (class_definition name: (identifier) @name) @inner) @definition.class
(decorated_definition definition: (function_definition name: (identifier) @name) @inner) @definition.function
(class_definition name: (identifier) @name) @definition.class
(function_definition name: (identifier) @name) @definition.function

; `NAME = value` or `NAME: T = value` at module level; not unpacking, a bare annotation, a
; dunder (`__all__`) or a one-letter name (`T = TypeVar("T")`).
(module
  (expression_statement . (assignment left: (identifier) @name right: (_) @body) @inner .)
    @definition.constant
  (#not-match? @name "^__.+__$")
  (#match? @name "^.."))

(class_definition body: (block (expression_statement) @field))
(module (expression_statement . (assignment)) @field)

(import_statement name: [(dotted_name) @import.module
                         (aliased_import name: (dotted_name) @import.module)]) @import
(import_from_statement
  module_name: (_) @import.module
  name: [(dotted_name) @import.name
         (aliased_import name: (dotted_name) @import.name)]) @import
(import_from_statement module_name: (_) @import.module (wildcard_import)) @import
(future_import_statement) @import

; Bases, not `metaclass=M` or `**kwargs`: the name each is written with (`Base`, `mod.Base`,
; `Generic[T]`, `with_metaclass(M)`, `*bases`).
(class_definition superclasses: (argument_list
  [(expression) (list_splat) (parenthesized_expression)] @reference.inherit.head))
