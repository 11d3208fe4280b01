; Rust: functions (free, in impls and traits, bodiless signatures), `macro_rules!`, structs,
; unions, enums, traits, type aliases, and impl blocks named after the type they implement
; for; implemented traits and supertraits; associated constants, statics and types. `use`
; trees stay a hand-written hook (`rust.rs`): flattening `use a::{b::C, D}` joins paths, which
; a query cannot. Inline `mod` blocks are the table's scopes.

(function_item name: (_) @name) @definition.function
(function_signature_item name: (_) @name) @definition.function
(macro_definition name: (_) @name) @definition.function
(struct_item name: (_) @name) @definition.struct
(union_item name: (_) @name) @definition.struct
(enum_item name: (_) @name) @definition.enum
(trait_item name: (_) @name) @definition.trait
(type_item name: (_) @name) @definition.type
(impl_item type: (_) @name.head) @definition.impl

(impl_item trait: (_) @reference.inherit.head)
(trait_item bounds: (trait_bounds [(_type) (higher_ranked_trait_bound)] @reference.inherit.head))

(source_file [(const_item) (static_item) (associated_type)] @field)
(impl_item body: (declaration_list [(const_item) (static_item) (associated_type)] @field))
(trait_item body: (declaration_list [(const_item) (static_item) (associated_type)] @field))
