; Ruby: classes and modules (both containers; a class reopened in another file has the same
; qualified name), instance and singleton methods; require / require_relative; calls,
; superclasses and mixins.

(class name: [(constant) @name (scope_resolution name: (constant) @name)]) @definition.class
(module name: [(constant) @name (scope_resolution name: (constant) @name)]) @definition.class
(method name: (_) @name) @definition.function
(singleton_method name: (_) @name) @definition.function

(body_statement (call method: (identifier) @_attr (#match? @_attr "^(attr_|include$|extend$|prepend$)")) @field)
(body_statement (assignment left: (constant)) @field)
(program (assignment left: (constant)) @field)

(call method: (identifier) @_req (#any-of? @_req "require" "require_relative" "load" "autoload")
      arguments: (argument_list (string (string_content) @import.module))) @import

(superclass [(constant) @reference.inherit
             (scope_resolution name: (constant) @reference.inherit)])
(call method: (identifier) @_mix (#any-of? @_mix "include" "extend" "prepend")
      arguments: (argument_list [(constant) @reference.inherit
                                 (scope_resolution name: (constant) @reference.inherit)]))
(call method: (identifier) @reference.call)
(call receiver: (constant) @reference.type)
(scope_resolution name: (constant) @reference.type)
