//! The UKO vocabulary: what an analyzer extracts from one file, before ids and token counts,
//! and the [`Warning`] a run reports about a file.

use serde::{Deserialize, Serialize};

/// Languages acms analyzes. JavaScript is parsed with the TypeScript grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Language {
    Python,
    TypeScript,
    Tsx,
    JavaScript,
    Rust,
    Java,
    Go,
    C,
    Cpp,
    CSharp,
    Ruby,
    Php,
    Bash,
    Kotlin,
    Swift,
    Scala,
    Markdown,
    JsonSchema,
    /// Any other text file: line-based chunks.
    Text,
}

impl Language {
    /// Stable lower-case name used in the store and in stats.
    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::JavaScript => "javascript",
            Language::Rust => "rust",
            Language::Java => "java",
            Language::Go => "go",
            Language::C => "c",
            Language::Cpp => "cpp",
            Language::CSharp => "csharp",
            Language::Ruby => "ruby",
            Language::Php => "php",
            Language::Bash => "bash",
            Language::Kotlin => "kotlin",
            Language::Swift => "swift",
            Language::Scala => "scala",
            Language::Markdown => "markdown",
            Language::JsonSchema => "json-schema",
            Language::Text => "text",
        }
    }

    /// Inverse of [`Language::name`].
    pub fn from_name(name: &str) -> Option<Language> {
        Some(match name {
            "python" => Language::Python,
            "typescript" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "javascript" => Language::JavaScript,
            "rust" => Language::Rust,
            "java" => Language::Java,
            "go" => Language::Go,
            "c" => Language::C,
            "cpp" => Language::Cpp,
            "csharp" => Language::CSharp,
            "ruby" => Language::Ruby,
            "php" => Language::Php,
            "bash" => Language::Bash,
            "kotlin" => Language::Kotlin,
            "swift" => Language::Swift,
            "scala" => Language::Scala,
            "markdown" => Language::Markdown,
            "json-schema" => Language::JsonSchema,
            "text" => Language::Text,
            _ => return None,
        })
    }
}

/// The kind of a UKO node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeKind {
    /// A whole file (Python module, TS module, Rust file, Java compilation unit, document).
    Module,
    Class,
    Interface,
    Struct,
    Enum,
    Trait,
    /// A Rust `impl` block.
    Impl,
    TypeAlias,
    /// A module-level binding of a value (Python `NAME = value`): a constant, a table, a
    /// setting, a type alias written as an assignment.
    Constant,
    Function,
    Method,
    /// A Markdown section (heading and the text under it).
    Section,
    /// A JSON Schema definition or property.
    Schema,
    /// A line-based chunk of a file without a parser (or one that hit a parse limit).
    Chunk,
}

impl NodeKind {
    /// Stable lower-case name used in ids and the store.
    pub fn name(self) -> &'static str {
        match self {
            NodeKind::Module => "module",
            NodeKind::Class => "class",
            NodeKind::Interface => "interface",
            NodeKind::Struct => "struct",
            NodeKind::Enum => "enum",
            NodeKind::Trait => "trait",
            NodeKind::Impl => "impl",
            NodeKind::TypeAlias => "type-alias",
            NodeKind::Constant => "constant",
            NodeKind::Function => "function",
            NodeKind::Method => "method",
            NodeKind::Section => "section",
            NodeKind::Schema => "schema",
            NodeKind::Chunk => "chunk",
        }
    }

    /// Inverse of [`NodeKind::name`].
    pub fn from_name(name: &str) -> Option<NodeKind> {
        Some(match name {
            "module" => NodeKind::Module,
            "class" => NodeKind::Class,
            "interface" => NodeKind::Interface,
            "struct" => NodeKind::Struct,
            "enum" => NodeKind::Enum,
            "trait" => NodeKind::Trait,
            "impl" => NodeKind::Impl,
            "type-alias" => NodeKind::TypeAlias,
            "constant" => NodeKind::Constant,
            "function" => NodeKind::Function,
            "method" => NodeKind::Method,
            "section" => NodeKind::Section,
            "schema" => NodeKind::Schema,
            "chunk" => NodeKind::Chunk,
            _ => return None,
        })
    }
}

/// One symbol extracted from a file.
///
/// The depth-9 rendering is `source[start_byte..end_byte]` and is not stored here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParsedNode {
    pub kind: NodeKind,
    /// Simple name (`make_response`); the file stem for a module.
    pub name: String,
    /// Dotted path from the module (`flask.app.Flask.make_response`).
    pub qualified_name: String,
    /// Index of the enclosing node in [`ParsedFile::nodes`]; `None` only for the module.
    pub parent: Option<usize>,
    /// 1-based, inclusive.
    pub start_line: u32,
    pub end_line: u32,
    pub start_byte: usize,
    pub end_byte: usize,
    /// Depth 0: the declaration header (`def f(a, b) -> int:`, `class C(Base):`).
    pub signature: String,
    /// The docstring / doc comment, cleaned of comment markers.
    pub doc: Option<String>,
    /// Depth 2: signature plus doc, laid out as the language would show it.
    pub with_doc: String,
    /// Depth 4: signature plus body skeleton (nested signatures, control-flow outline, bodies
    /// elided with a marker).
    pub skeleton: String,
}

/// How a reference relates its source node to the name it mentions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefKind {
    /// A call or another use of a name in a body.
    Call,
    /// A base class, implemented interface or trait.
    Inherits,
}

/// A name mentioned inside a node, resolved to nodes later (best effort, by name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParsedRef {
    /// Index of the innermost enclosing node in [`ParsedFile::nodes`].
    pub from: usize,
    /// The simple name referenced (`make_response` for `self.make_response(...)`).
    pub name: String,
    pub kind: RefKind,
}

/// An import statement, resolved to a repository file later by the language's resolver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParsedImport {
    /// The module path as written (`..utils`, `./app`, `crate::config`, `java.util.List`).
    pub module: String,
    /// Names imported from it, if the statement lists them.
    pub names: Vec<String>,
}

/// Everything an analyzer extracts from one file. Analysis never fails: problems are
/// `warnings`, and what tree-sitter recovered is still returned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParsedFile {
    /// `nodes[0]` is the module node spanning the whole file.
    pub nodes: Vec<ParsedNode>,
    pub refs: Vec<ParsedRef>,
    pub imports: Vec<ParsedImport>,
    /// Human-readable problems (syntax errors recovered, parse timeout, ...), without the
    /// file name: the caller adds it.
    pub warnings: Vec<String>,
}

/// A problem with one file; the run went on without it (or with what could be recovered).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// Repository-relative path.
    pub path: String,
    pub message: String,
}

impl Warning {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Warning {
        Warning {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}
