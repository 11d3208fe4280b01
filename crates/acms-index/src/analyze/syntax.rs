//! Reading a tree-sitter syntax tree: node text, names, and the [`Def`] a language's hooks or
//! its query find. Shared by the walker and the query captures, which both read nodes.

use tree_sitter::Node;

use super::common::slice;
use crate::model::NodeKind;

/// A definition found in a tree, by a language's `classify` hook or by its query.
pub(crate) struct Def<'t> {
    pub kind: NodeKind,
    pub name: String,
    /// The node that holds the body (the arrow function of `const f = () => {}`); the
    /// signature ends at the last token of this node before the body.
    pub body_owner: Node<'t>,
    pub body: Option<Node<'t>>,
}

impl<'t> Def<'t> {
    /// A definition whose body is the `body` field of the node itself.
    pub fn simple(node: Node<'t>, kind: NodeKind, name: String) -> Def<'t> {
        Def {
            kind,
            name,
            body_owner: node,
            body: node.child_by_field_name("body"),
        }
    }
}

/// Text of a node, clamped to char boundaries.
pub(crate) fn text<'s>(n: Node, src: &'s str) -> &'s str {
    slice(src, n.start_byte(), n.end_byte())
}

/// Text of a named field.
pub(crate) fn field_text<'s>(n: Node, field: &str, src: &'s str) -> Option<&'s str> {
    n.child_by_field_name(field).map(|f| text(f, src))
}

/// Named children of a node.
pub(crate) fn named_children(n: Node<'_>) -> Vec<Node<'_>> {
    let mut c = n.walk();
    n.named_children(&mut c).collect()
}

pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

/// The simple name an expression or type ends in: `foo` for `a.b.foo`, `self.foo`,
/// `Foo::foo`; `List` for `List<String>`; `Base` for `Generic[Base]`.
pub(crate) fn head_name(n: Node, src: &str) -> Option<String> {
    const FIELDS: &[&str] = &[
        "name",
        "property",
        "attribute",
        "field",
        "type",
        "value",
        "function",
        "constructor",
    ];
    let mut n = n;
    // Bounded: type expressions are shallow, and this must not loop on odd recovery trees.
    for _ in 0..32 {
        if n.named_child_count() == 0 {
            let t = text(n, src);
            return is_identifier(t).then(|| t.to_string());
        }
        let next = FIELDS
            .iter()
            .find_map(|f| n.child_by_field_name(f))
            .or_else(|| {
                if n.kind().contains("scoped") {
                    n.named_child(n.named_child_count() - 1)
                } else {
                    n.named_child(0)
                }
            });
        n = next?;
    }
    None
}

/// The name a call node calls.
pub(crate) fn call_name(n: Node, src: &str) -> Option<String> {
    ["function", "constructor", "name", "type", "macro"]
        .iter()
        .find_map(|f| n.child_by_field_name(f))
        .and_then(|f| head_name(f, src))
}
