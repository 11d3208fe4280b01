//! The acms knowledge index (UKO): walks a repository, analyzes each file with tree-sitter
//! into symbols rendered at four detail depths with exact token counts, links them with
//! edges, and keeps it all in an on-disk store that is updated incrementally.

pub mod analyze;
mod banner;
mod build;
mod error;
mod escape;
pub mod model;
mod naming;
mod packed;
mod resolve;
pub mod seal;
pub mod store;
pub mod walk;

/// The version of what the analyzers extract. Bump it when a change makes an existing index
/// stale (a new kind of node, a rendering that changed, a kind of file read that was not):
/// the next `acms index` then re-parses every file instead of only the changed ones, and
/// reads again the files it did not index. 2: sections of crate docs. 3: Python
/// module-level constants. 6: members passed as arguments are references (4 and 5 were
/// measured and not kept). 7: TypeScript functions behind a cast (`(() => {…}) as any`).
/// 8: Go, C, C++, C#, Ruby, PHP, Bash, Kotlin, Swift, Scala. 9: Java on its query (an
/// anonymous class's fields are kept in skeletons); C# parsed with its `#if` lines blanked.
/// 10: Python and Rust on queries; a query language's base is never also a use of its
/// definition (`@As(C.class) class A extends C`), and a base of no definition is a use.
/// 11: JavaScript/TypeScript functions behind a guard or an anonymous wrapper call
/// (`export default ok && (async () => {…})`, `const h = wrap(async () => {…})`). 12: a Java
/// field holding an anonymous class is a class named by the field. 15: an extension-less
/// script is read in the language its `#!` line names. 16: a shell file's code outside its
/// functions is also line chunks. 17: a Java, Kotlin or Scala package directory is one
/// namespace, and an import may name a file of another module (the graph is resolved again).
/// 18: such a package spans its Gradle and Maven source roots (`main` and `test`, `commonMain`
/// and `jvmMain`). 19: a module's keyword document holds its imports (the keyword index is
/// written again).
pub const ANALYZERS_VERSION: &str = "19";

pub use banner::{HEAD_CHARS, HEADER_LINES, generated_file, generated_header};
pub use build::{IndexOptions, IndexReport, LeftOut, NodeChanges, index_repo, indexable};
pub use error::{Error, Result};
pub use naming::{name_words, test_directory};
pub use seal::{DB_FILE, Standing, default_index_dir, standing};
pub use store::{APPLICATION_ID, EdgeKind, EdgeRecord, FileRecord, Meta, NodeRecord, Store};
pub use walk::{Deny, WalkEntry, Walked, rel_path, walk, walk_dir};

pub use analyze::{
    Analyzer, Cost, GROWTH_PER_BYTE, GROWTH_SLACK, MAX_DEF_DEPTH, MAX_NAME_BYTES, ParseLimits,
    analyzer_for, detect_language,
};
pub use model::{
    Language, NodeKind, ParsedFile, ParsedImport, ParsedNode, ParsedRef, RefKind, Warning,
};
