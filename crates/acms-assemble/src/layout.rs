//! Stage 9's layout: packed items rendered as the context text — the preamble, the inherited
//! skeleton, then the blocks of [`render::blocks`] in the orderer's order. The verifier
//! renders each set of items it tries through [`Layout::render`]; the texts and file lines it
//! reads come from the store once per assembly ([`Sources`]), and a failed read is the
//! render's error.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use acms_core::{Depth, NodeId};
use acms_index::{NodeRecord, Store};
use acms_pack::{Candidate, PackItem};

use crate::error::{Error, Result};
use crate::render::{self, FileLines};
use crate::stages::StageContext;
use crate::stages::packer::{full_nodes, still_shown};
use crate::stages::preamble::{PreambleGenerator, Provenance};
use crate::types::{Fragment, Placed};

/// What the layouts of one assembly read from the store, read once: file lines and
/// renderings.
pub(crate) struct Sources<'s> {
    store: &'s Store,
    files: HashMap<String, Arc<FileLines>>,
    texts: HashMap<(NodeId, Depth), String>,
}

impl<'s> Sources<'s> {
    pub fn new(store: &'s Store) -> Sources<'s> {
        Sources {
            store,
            files: HashMap::new(),
            texts: HashMap::new(),
        }
    }

    fn text(&mut self, node: NodeId, depth: Depth) -> Result<String> {
        if let Some(t) = self.texts.get(&(node, depth)) {
            return Ok(t.clone());
        }
        let t = self.store.text(node, depth)?;
        self.texts.insert((node, depth), t.clone());
        Ok(t)
    }

    fn lines(&mut self, path: &str) -> Result<Arc<FileLines>> {
        if let Some(l) = self.files.get(path) {
            return Ok(l.clone());
        }
        let content = self
            .store
            .file_content(path)?
            .ok_or_else(|| Error::MissingText {
                path: path.to_string(),
            })?;
        let lines = Arc::new(FileLines::new(content));
        self.files.insert(path.to_string(), lines.clone());
        Ok(lines)
    }
}

/// What every verified layout of one assembly shares.
pub(crate) struct Page<'a> {
    pub ctx: &'a StageContext<'a>,
    /// Every fragment that reached the packer, in its order.
    pub fragments: &'a [Fragment],
    /// Their knapsack candidates: the depths verification may fall back to.
    pub candidates: &'a [Candidate],
    /// What the preamble reports that is known before packing; what is included and what
    /// did not fit are counted per layout.
    pub provenance: &'a Provenance,
    /// The parent's skeleton, shown after the preamble.
    pub inherited: &'a str,
    /// The whole budget the text is verified against.
    pub total: u32,
}

/// One packing in the orderer's order, rendered at whatever depths the verifier tries.
pub(crate) struct Layout<'a, 's> {
    page: &'a Page<'a>,
    generator: &'a dyn PreambleGenerator,
    placed: &'a [Placed],
    /// Fragments left out of the packing because an enclosing fragment shows them.
    enclosed: &'a [usize],
    sources: &'a mut Sources<'s>,
    /// Those of `enclosed` that the last rendering still shows: their enclosing fragment
    /// kept depth 9.
    shown: Vec<usize>,
}

impl<'a, 's> Layout<'a, 's> {
    pub fn new(
        page: &'a Page<'a>,
        generator: &'a dyn PreambleGenerator,
        placed: &'a [Placed],
        enclosed: &'a [usize],
        sources: &'a mut Sources<'s>,
    ) -> Layout<'a, 's> {
        Layout {
            page,
            generator,
            placed,
            enclosed,
            sources,
            shown: Vec::new(),
        }
    }

    /// Those of the enclosed fragments the last rendering still shows.
    pub fn into_shown(self) -> Vec<usize> {
        self.shown
    }

    /// The context text with `items` (a subset of the placed fragments, at their depths).
    pub fn render(&mut self, items: &[PackItem]) -> Result<String> {
        let depth_of: HashMap<NodeId, Depth> =
            items.iter().map(|it| (NodeId(it.id), it.depth)).collect();
        let corpus = self.page.ctx.corpus;
        let mut pieces = Vec::with_capacity(items.len());
        for pl in self.placed {
            let Some(&depth) = depth_of.get(&pl.fragment.node) else {
                continue;
            };
            let Some(node) = corpus.node(pl.fragment.node) else {
                continue;
            };
            pieces.push(self.piece(node, depth, &depth_of)?);
        }
        let blocks: Vec<String> = render::blocks(&pieces)
            .iter()
            .map(render::Block::render)
            .collect();
        let preamble = self.preamble(items);
        Ok(render::context(&preamble, self.page.inherited, &blocks))
    }

    /// `node` at `depth`, as [`render::blocks`] takes it: its text (or, at depth 9, its
    /// file's lines), its indentation, and the line of its container unless the container
    /// is shown itself at skeleton or deeper (which already shows the member's line).
    fn piece<'n>(
        &mut self,
        node: &'n NodeRecord,
        depth: Depth,
        depth_of: &HashMap<NodeId, Depth>,
    ) -> Result<render::Piece<'n>> {
        let corpus = self.page.ctx.corpus;
        let container = render::container(node, |id| corpus.node(id))
            .filter(|c| depth_of.get(&c.id).is_none_or(|d| *d < Depth::Skeleton));
        let container = match container {
            Some(c) => {
                let indent = self.sources.lines(&c.path)?.indent(c.start_line);
                Some(render::container_line(c, &indent))
            }
            None => None,
        };
        let file = self.sources.lines(&node.path)?;
        let lines = (depth == Depth::Full)
            .then(|| file.clone())
            .filter(|lines| line_aligned(node, lines));
        let text = match lines {
            Some(_) => String::new(),
            None => self.sources.text(node.id, depth)?,
        };
        Ok(render::Piece {
            node,
            name: render::display_name(node, corpus.module(&node.path)),
            depth,
            text,
            lines,
            indent: file.indent(node.start_line),
            container,
        })
    }

    /// Stage 9's component on what `items` include: per depth, in how many files, and how
    /// many fragments did not fit (those an included body shows do not count).
    fn preamble(&mut self, items: &[PackItem]) -> String {
        let ctx = self.page.ctx;
        let mut prov = self.page.provenance.clone();
        let mut files = BTreeSet::new();
        for it in items {
            prov.by_depth[it.depth.index()] += 1;
            if let Some(n) = ctx.corpus.node(NodeId(it.id)) {
                files.insert(n.path.as_str());
            }
        }
        prov.files = files.len();
        self.shown = still_shown(ctx, self.page.fragments, self.enclosed, &full_nodes(items));
        prov.dropped_budget = self.page.fragments.len() - items.len() - self.shown.len();
        self.generator
            .preamble(ctx, &prov, ctx.config.preamble.max_tokens)
    }
}

/// Whether `node`'s lines are (nearly) just the node: then depth 9 is cut from the file by
/// lines, indentation included, and may merge with its neighbours. A node that shares its
/// lines with much else (minified code: one line, many functions) keeps its byte span.
fn line_aligned(node: &NodeRecord, lines: &FileLines) -> bool {
    let a = (node.start_line.max(1) - 1) as usize;
    let b = (node.end_line as usize).min(lines.len());
    if a > b {
        return false;
    }
    let line_bytes: usize = lines.range(a, b).map(|l| l.len() + 1).sum();
    line_bytes <= node.end_byte.saturating_sub(node.start_byte) + 160
}
