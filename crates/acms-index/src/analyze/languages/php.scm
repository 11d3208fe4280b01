; PHP: classes, interfaces, traits, enums, methods, functions; namespaces (braced ones as
; name scopes, statement ones as the package); `use` imports and include/require; calls,
; `new`, base classes, interfaces and used traits.

(class_declaration name: (name) @name) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(trait_declaration name: (name) @name) @definition.trait
(enum_declaration name: (name) @name) @definition.enum
(method_declaration name: (name) @name) @definition.method
(function_definition name: (name) @name) @definition.function

(namespace_definition name: (namespace_name) @name body: (_)) @scope
(namespace_definition name: (namespace_name) @name !body) @package

(declaration_list (property_declaration) @field)
(declaration_list (const_declaration) @field)
(declaration_list (use_declaration) @field)
(enum_declaration_list (enum_case) @field)

(namespace_use_declaration (namespace_use_clause [(qualified_name) (name)] @import.module)) @import
(expression_statement [(include_expression [(string (string_content) @import.module) (encapsed_string (string_content) @import.module)])
                       (include_once_expression [(string (string_content) @import.module) (encapsed_string (string_content) @import.module)])
                       (require_expression [(string (string_content) @import.module) (encapsed_string (string_content) @import.module)])
                       (require_once_expression [(string (string_content) @import.module) (encapsed_string (string_content) @import.module)])]) @import

(function_call_expression function: [(name) @reference.call
                                     (qualified_name (name) @reference.call .)])
(member_call_expression name: (name) @reference.call)
(nullsafe_member_call_expression name: (name) @reference.call)
(scoped_call_expression name: (name) @reference.call)
(object_creation_expression [(name) @reference.call
                             (qualified_name (name) @reference.call .)])
(base_clause [(name) @reference.inherit (qualified_name (name) @reference.inherit .)])
(class_interface_clause [(name) @reference.inherit (qualified_name (name) @reference.inherit .)])
(use_declaration [(name) @reference.inherit (qualified_name (name) @reference.inherit .)])
(named_type [(name) @reference.type (qualified_name (name) @reference.type .)])
