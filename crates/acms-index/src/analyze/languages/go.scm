; Go: functions, methods (owned by their receiver's type, wherever the file), structs,
; interfaces, type aliases; imports; calls and type uses; embedded fields as bases.

(function_declaration name: (identifier) @name) @definition.function

(method_declaration
  receiver: (parameter_list
    (parameter_declaration
      type: [(type_identifier) @owner
             (pointer_type (type_identifier) @owner)
             (generic_type type: (type_identifier) @owner)
             (pointer_type (generic_type type: (type_identifier) @owner))]))
  name: (field_identifier) @name) @definition.method

; A lone `type X …` is the definition; in a `type ( … )` group each spec is one.
(type_declaration . (type_spec name: (type_identifier) @name type: (struct_type (field_declaration_list) @body)) .) @definition.struct
(type_declaration . (type_spec name: (type_identifier) @name type: (interface_type) @body) .) @definition.interface
(type_declaration . [(type_spec name: (type_identifier) @name type: [(type_identifier) (qualified_type) (generic_type) (function_type) (map_type) (slice_type) (array_type) (pointer_type) (channel_type)])
                     (type_alias name: (type_identifier) @name)] .) @definition.type
(type_declaration "(" (type_spec name: (type_identifier) @name type: (struct_type (field_declaration_list) @body)) @definition.struct)
(type_declaration "(" (type_spec name: (type_identifier) @name type: (interface_type) @body) @definition.interface)

(method_elem name: (field_identifier) @name) @definition.method

(source_file (const_declaration) @field)
(source_file (var_declaration) @field)
(field_declaration_list (field_declaration) @field)

(import_declaration [(import_spec path: (_) @import.module)
                     (import_spec_list (import_spec path: (_) @import.module))]) @import

(call_expression function: [(identifier) @reference.call
                            (selector_expression field: (field_identifier) @reference.call)
                            (generic_type type: (type_identifier) @reference.call)])
(field_declaration !name type: [(type_identifier) @reference.inherit
                                (pointer_type (type_identifier) @reference.inherit)])
(interface_type (type_elem (type_identifier) @reference.inherit))
(type_identifier) @reference.type
