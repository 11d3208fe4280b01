//! [`PlanStore`]: plans, phases and decisions in one SQLite database (`plans.sqlite`) inside
//! the index directory.
//!
//! Every operation is one `BEGIN IMMEDIATE` transaction that also runs tier maintenance
//! (promotion, demotion, expiry) at the store's time, so a process killed at any point leaves
//! the previous state, two processes on the same plan serialize (the second waits up to the
//! busy timeout, then gets [`Error::Busy`]), and every process sees the same tiers.
//!
//! **Architecture Invariant:** no code text is stored: decisions and phases hold fragment
//! references (node id, path, lines, name, depth, tokens, score); texts stay in the index.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use acms_core::{Depth, NodeId};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use crate::tiers::{TierInput, TierPolicy, assign};
use crate::warm::{MemorySnapshot, WarmDecision, terms};
use crate::{
    Clock, Decision, DecisionId, Error, FragmentRef, History, PhaseInputs, PhaseRecord, Plan,
    PlanId, Result, Tier, TierReport,
};

/// Schema version this build writes; older databases are migrated, newer ones refused.
pub const SCHEMA_VERSION: u32 = 2;

/// File name of the database inside the index directory.
pub const DB_FILE: &str = "plans.sqlite";

/// How long an operation waits for another process's transaction by default.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS plans (
    id INTEGER PRIMARY KEY AUTOINCREMENT, parent INTEGER, task TEXT NOT NULL,
    created INTEGER NOT NULL, closed INTEGER);
CREATE TABLE IF NOT EXISTS phases (
    plan INTEGER NOT NULL, seq INTEGER NOT NULL, name TEXT NOT NULL, focus TEXT NOT NULL,
    budget INTEGER NOT NULL, tokens INTEGER NOT NULL, refreshed INTEGER NOT NULL,
    manifest TEXT NOT NULL, created INTEGER NOT NULL, inputs TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (plan, seq));
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT, plan INTEGER NOT NULL, phase_seq INTEGER NOT NULL,
    phase TEXT NOT NULL, task TEXT NOT NULL, notes TEXT, tier TEXT NOT NULL,
    created INTEGER NOT NULL, last_used INTEGER NOT NULL, corrected INTEGER, correction TEXT);
CREATE INDEX IF NOT EXISTS decisions_plan ON decisions(plan);
CREATE TABLE IF NOT EXISTS decision_fragments (
    decision INTEGER NOT NULL, node INTEGER NOT NULL, path TEXT NOT NULL,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, name TEXT NOT NULL,
    depth INTEGER NOT NULL, tokens INTEGER NOT NULL, score REAL NOT NULL,
    PRIMARY KEY (decision, node));
CREATE INDEX IF NOT EXISTS decision_fragments_node ON decision_fragments(node);
";

/// The tables of [`SCHEMA`]: a database missing any of them is new or damaged.
const TABLES: [&str; 5] = ["meta", "plans", "phases", "decisions", "decision_fragments"];

/// A phase to record (what the workspace assembled).
#[derive(Debug, Clone, PartialEq)]
pub struct NewPhase {
    pub plan: PlanId,
    pub name: String,
    pub focus: String,
    pub budget: usize,
    pub tokens: usize,
    pub refreshed: usize,
    pub manifest: Vec<FragmentRef>,
    pub inputs: PhaseInputs,
}

/// The plan and decision database of one index directory.
pub struct PlanStore {
    conn: Connection,
    path: PathBuf,
    clock: Arc<dyn Clock>,
    policy: TierPolicy,
}

fn tier_rank(t: Tier) -> u8 {
    match t {
        Tier::Hot => 0,
        Tier::Warm => 1,
        Tier::Cold => 2,
    }
}

/// Checks a phase name: short, one line, not empty.
pub fn check_phase_name(name: &str) -> Result<&str> {
    let n = name.trim();
    if n.is_empty() || n.chars().count() > 64 || n.contains(['\n', '\r']) {
        return Err(Error::Invalid(format!(
            "`{name}` is not a phase name: use one word or short phrase (explore, design, implement, verify, ...)"
        )));
    }
    Ok(n)
}

impl PlanStore {
    /// Opens (creating if needed) the database in `index_dir`.
    pub fn open(index_dir: &Path, policy: TierPolicy, clock: Arc<dyn Clock>) -> Result<PlanStore> {
        let path = index_dir.join(DB_FILE);
        std::fs::create_dir_all(index_dir).map_err(|e| {
            Error::Invalid(format!(
                "cannot create the index directory {}: {e}",
                index_dir.display()
            ))
        })?;
        let conn = Connection::open(&path).map_err(|e| Error::db(&path, e))?;
        let mut store = PlanStore {
            conn,
            path,
            clock,
            policy,
        };
        store.init()?;
        Ok(store)
    }

    /// Opens the database in `index_dir` if one exists (plain queries read memory without
    /// creating a database).
    pub fn open_existing(
        index_dir: &Path,
        policy: TierPolicy,
        clock: Arc<dyn Clock>,
    ) -> Result<Option<PlanStore>> {
        if index_dir.join(DB_FILE).is_file() {
            PlanStore::open(index_dir, policy, clock).map(Some)
        } else {
            Ok(None)
        }
    }

    fn err(&self, e: rusqlite::Error) -> Error {
        Error::db(&self.path, e)
    }

    fn init(&mut self) -> Result<()> {
        self.conn
            .busy_timeout(DEFAULT_BUSY_TIMEOUT)
            .map_err(|e| self.err(e))?;
        // WAL lets readers go on while a phase is written; it persists in the file. Setting
        // it needs a moment of exclusive access, which the busy timeout covers.
        self.conn
            .execute_batch(
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=OFF;",
            )
            .map_err(|e| self.err(e))?;
        let path = self.path.clone();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| Error::db(&path, e))?;
        let tables: Vec<String> = tx
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .map_err(|e| Error::db(&path, e))?;
        let pages: i64 = tx
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .map_err(|e| Error::db(&path, e))?;
        let complete = TABLES.iter().all(|t| tables.iter().any(|n| n == t));
        // A new file has no table and at most its first page (the WAL switch writes it). Any
        // other file without all our tables lost its schema to damage: creating the tables
        // afresh would bury its plans and answer "unknown plan".
        if !complete && (pages > 1 || !tables.is_empty()) {
            return Err(Error::damaged_store(&path, "its tables are missing"));
        }
        let has_meta = complete;
        let found: Option<u32> = if has_meta {
            tx.query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get::<_, String>(0),
            )
            .optional()
            .map_err(|e| Error::db(&path, e))?
            .map(|v| v.parse().unwrap_or(u32::MAX))
        } else {
            None
        };
        match found {
            Some(v) if v > SCHEMA_VERSION => {
                return Err(Error::NewerSchema {
                    path,
                    found: v,
                    supported: SCHEMA_VERSION,
                });
            }
            // Version 1 recorded phases without their inputs: they read as empty.
            Some(1) => {
                tx.execute_batch(
                    "ALTER TABLE phases ADD COLUMN inputs TEXT NOT NULL DEFAULT '{}';
                     UPDATE meta SET value = '2' WHERE key = 'schema_version';",
                )
                .map_err(|e| Error::db(&path, e))?;
            }
            Some(_) => {}
            None => {
                tx.execute_batch(SCHEMA).map_err(|e| Error::db(&path, e))?;
                tx.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?1)",
                    params![SCHEMA_VERSION.to_string()],
                )
                .map_err(|e| Error::db(&path, e))?;
            }
        }
        tx.commit().map_err(|e| Error::db(&path, e))
    }

    /// Where the database is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How long an operation waits for another process before [`Error::Busy`].
    pub fn set_busy_timeout(&self, timeout: Duration) -> Result<()> {
        self.conn.busy_timeout(timeout).map_err(|e| self.err(e))
    }

    /// The tier policy in force.
    pub fn policy(&self) -> &TierPolicy {
        &self.policy
    }

    /// Runs `f` in one immediate transaction, then tier maintenance, then commits.
    fn write<T>(
        &mut self,
        f: impl FnOnce(&Transaction<'_>, i64) -> Result<T>,
    ) -> Result<(T, TierReport)> {
        let path = self.path.clone();
        let policy = self.policy;
        let clock_now = self.clock.now();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| Error::db(&path, e))?;
        let (now, behind) = tick(&tx, &path, clock_now)?;
        let value = f(&tx, now)?;
        let mut report = maintain(&tx, &path, &policy, now)?;
        report.clock_behind = behind;
        tx.commit().map_err(|e| Error::db(&path, e))?;
        Ok((value, report))
    }

    /// Runs tier maintenance alone.
    pub fn maintain(&mut self) -> Result<TierReport> {
        Ok(self.write(|_, _| Ok(()))?.1)
    }

    /// Starts a plan (a child of `parent` when given).
    pub fn start(&mut self, task: &str, parent: Option<PlanId>) -> Result<(Plan, TierReport)> {
        let task = task.trim();
        if task.is_empty() {
            return Err(Error::Invalid(
                "the task is empty: say what the plan is for".into(),
            ));
        }
        let path = self.path.clone();
        self.write(|tx, now| {
            if let Some(p) = parent {
                let parent_plan = plan_in(tx, &path, p)?;
                if parent_plan.closed.is_some() {
                    return Err(Error::PlanClosed(p.to_string()));
                }
            }
            tx.execute(
                "INSERT INTO plans(parent, task, created) VALUES (?1, ?2, ?3)",
                params![parent.map(|p| p.0), task, now],
            )
            .map_err(|e| Error::db(&path, e))?;
            Ok(Plan {
                id: PlanId(tx.last_insert_rowid()),
                parent,
                task: task.to_string(),
                created: now,
                closed: None,
            })
        })
    }

    /// The plan `id`.
    pub fn plan(&self, id: PlanId) -> Result<Plan> {
        plan_in(&self.conn, &self.path, id)
    }

    /// The latest phase of `plan`, if it ran one.
    pub fn last_phase(&self, plan: PlanId) -> Result<Option<PhaseRecord>> {
        self.latest(
            plan,
            "SELECT MAX(seq) FROM phases WHERE plan = ?1 AND ?2 IS NULL",
            None,
        )
    }

    /// The latest run of the phase `name` of `plan`.
    pub fn last_run(&self, plan: PlanId, name: &str) -> Result<Option<PhaseRecord>> {
        self.latest(
            plan,
            "SELECT MAX(seq) FROM phases WHERE plan = ?1 AND name = ?2",
            Some(name),
        )
    }

    /// The latest phase of `plan` not named `name`: what a run of `name` is seeded by, so
    /// running a phase again never feeds on its own previous selection.
    pub fn last_phase_before(&self, plan: PlanId, name: &str) -> Result<Option<PhaseRecord>> {
        self.latest(
            plan,
            "SELECT MAX(seq) FROM phases WHERE plan = ?1 AND name <> ?2",
            Some(name),
        )
    }

    fn latest(&self, plan: PlanId, sql: &str, name: Option<&str>) -> Result<Option<PhaseRecord>> {
        let seq: Option<i64> = self
            .conn
            .query_row(sql, params![plan.0, name], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        match seq {
            Some(s) => phase_in(&self.conn, &self.path, plan, s).map(Some),
            None => Ok(None),
        }
    }

    /// Records an assembled phase and promotes the decisions whose fragments are back in the
    /// window (at least half of them).
    pub fn record_phase(&mut self, phase: NewPhase) -> Result<(PhaseRecord, TierReport)> {
        let name = check_phase_name(&phase.name)?.to_string();
        let path = self.path.clone();
        self.write(|tx, now| {
            let plan = plan_in(tx, &path, phase.plan)?;
            if plan.closed.is_some() {
                return Err(Error::PlanClosed(plan.id.to_string()));
            }
            let seq: i64 = tx
                .query_row(
                    "SELECT COALESCE(MAX(seq), 0) + 1 FROM phases WHERE plan = ?1",
                    params![plan.id.0],
                    |r| r.get(0),
                )
                .map_err(|e| Error::db(&path, e))?;
            let manifest = serde_json::to_string(&phase.manifest).map_err(|e| Error::Damaged {
                path: path.clone(),
                message: e.to_string(),
            })?;
            let inputs = serde_json::to_string(&phase.inputs).map_err(|e| Error::Damaged {
                path: path.clone(),
                message: e.to_string(),
            })?;
            tx.execute(
                "INSERT INTO phases(plan, seq, name, focus, budget, tokens, refreshed, manifest, created, inputs)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    plan.id.0,
                    seq,
                    name,
                    phase.focus,
                    phase.budget as i64,
                    phase.tokens as i64,
                    phase.refreshed as i64,
                    manifest,
                    now,
                    inputs
                ],
            )
            .map_err(|e| Error::db(&path, e))?;
            promote(tx, &path, &phase.manifest, now)?;
            Ok(PhaseRecord {
                plan: plan.id,
                seq,
                name,
                focus: phase.focus.clone(),
                budget: phase.budget,
                tokens: phase.tokens,
                refreshed: phase.refreshed,
                manifest: phase.manifest.clone(),
                created: now,
                inputs: phase.inputs.clone(),
            })
        })
    }

    /// Records a decision taken in the latest run of `phase` of `plan`, on the fragments
    /// `nodes` of that phase's manifest (all of them when empty).
    pub fn decide(
        &mut self,
        plan: PlanId,
        phase: &str,
        notes: Option<&str>,
        nodes: &[NodeId],
    ) -> Result<(Decision, TierReport)> {
        let phase_name = check_phase_name(phase)?.to_string();
        let notes = notes
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(String::from);
        let path = self.path.clone();
        self.write(|tx, now| {
            let p = plan_in(tx, &path, plan)?;
            if p.closed.is_some() {
                return Err(Error::PlanClosed(plan.to_string()));
            }
            let seq: Option<i64> = tx
                .query_row(
                    "SELECT MAX(seq) FROM phases WHERE plan = ?1 AND name = ?2",
                    params![plan.0, phase_name],
                    |r| r.get(0),
                )
                .map_err(|e| Error::db(&path, e))?;
            let Some(seq) = seq else {
                let mut stmt = tx
                    .prepare("SELECT DISTINCT name FROM phases WHERE plan = ?1 ORDER BY name")
                    .map_err(|e| Error::db(&path, e))?;
                let known: Vec<String> = stmt
                    .query_map(params![plan.0], |r| r.get(0))
                    .and_then(|rows| rows.collect())
                    .map_err(|e| Error::db(&path, e))?;
                return Err(Error::UnknownPhase {
                    plan: plan.to_string(),
                    phase: phase_name,
                    known: if known.is_empty() {
                        "none yet".into()
                    } else {
                        known.join(", ")
                    },
                });
            };
            let record = phase_in(tx, &path, plan, seq)?;
            let chosen: Vec<FragmentRef> = if nodes.is_empty() {
                record.manifest.clone()
            } else {
                let mut out = Vec::with_capacity(nodes.len());
                for n in nodes {
                    let f = record
                        .manifest
                        .iter()
                        .find(|f| f.node == *n)
                        .ok_or_else(|| Error::NotInManifest {
                            phase: record.name.clone(),
                            fragment: n.to_string(),
                        })?;
                    if !out.iter().any(|o: &FragmentRef| o.node == f.node) {
                        out.push(f.clone());
                    }
                }
                out
            };
            let task = if record.focus.is_empty() {
                p.task.clone()
            } else {
                format!("{} — {}", p.task, record.focus)
            };
            tx.execute(
                "INSERT INTO decisions(plan, phase_seq, phase, task, notes, tier, created, last_used)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'hot', ?6, ?6)",
                params![plan.0, seq, record.name, task, notes, now],
            )
            .map_err(|e| Error::db(&path, e))?;
            let id = DecisionId(tx.last_insert_rowid());
            insert_fragments(tx, &path, id, &chosen)?;
            Ok(id)
        })
        .and_then(|(id, report)| Ok((self.decision(id)?, report)))
    }

    /// Closes a plan: its decisions leave the hot tier.
    pub fn close(&mut self, plan: PlanId) -> Result<(Plan, TierReport)> {
        let path = self.path.clone();
        self.write(|tx, now| {
            let mut p = plan_in(tx, &path, plan)?;
            if p.closed.is_none() {
                tx.execute(
                    "UPDATE plans SET closed = ?2 WHERE id = ?1",
                    params![plan.0, now],
                )
                .map_err(|e| Error::db(&path, e))?;
                p.closed = Some(now);
            }
            Ok(p)
        })
    }

    /// Everything recorded about `plan`.
    pub fn history(&mut self, plan: PlanId) -> Result<(History, TierReport)> {
        let path = self.path.clone();
        let ((), report) = self.write(|tx, _| plan_in(tx, &path, plan).map(|_| ()))?;
        let p = self.plan(plan)?;
        let mut stmt = self
            .conn
            .prepare("SELECT seq FROM phases WHERE plan = ?1 ORDER BY seq")
            .map_err(|e| self.err(e))?;
        let seqs: Vec<i64> = stmt
            .query_map(params![plan.0], |r| r.get(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.err(e))?;
        let phases = seqs
            .into_iter()
            .map(|s| phase_in(&self.conn, &self.path, plan, s))
            .collect::<Result<Vec<_>>>()?;
        let decisions = self.decisions(None, Some(plan))?;
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM plans WHERE parent = ?1 ORDER BY id")
            .map_err(|e| self.err(e))?;
        let children: Vec<PlanId> = stmt
            .query_map(params![plan.0], |r| Ok(PlanId(r.get(0)?)))
            .and_then(|rows| rows.collect())
            .map_err(|e| self.err(e))?;
        Ok((
            History {
                plan: p,
                phases,
                decisions,
                children,
            },
            report,
        ))
    }

    /// Decisions, newest first, optionally of one tier and one plan.
    pub fn decisions(&self, tier: Option<Tier>, plan: Option<PlanId>) -> Result<Vec<Decision>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id FROM decisions WHERE (?1 IS NULL OR tier = ?1) AND (?2 IS NULL OR plan = ?2)
                 ORDER BY id DESC",
            )
            .map_err(|e| self.err(e))?;
        let ids: Vec<i64> = stmt
            .query_map(params![tier.map(Tier::name), plan.map(|p| p.0)], |r| {
                r.get(0)
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| self.err(e))?;
        ids.into_iter()
            .map(|id| self.decision(DecisionId(id)))
            .collect()
    }

    /// The decision `id` (for audit: reading it does not promote it).
    pub fn decision(&self, id: DecisionId) -> Result<Decision> {
        decision_in(&self.conn, &self.path, id)
    }

    /// Marks a decision corrected: it goes cold, and its fragments are demoted in later
    /// scoring until it expires.
    pub fn correct(
        &mut self,
        id: DecisionId,
        note: Option<&str>,
    ) -> Result<(Decision, TierReport)> {
        let path = self.path.clone();
        let note = note
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(String::from);
        let ((), report) = self.write(|tx, now| {
            decision_in(tx, &path, id)?;
            tx.execute(
                "UPDATE decisions SET corrected = ?2, correction = ?3 WHERE id = ?1",
                params![id.0, now, note],
            )
            .map_err(|e| Error::db(&path, e))?;
            Ok(())
        })?;
        Ok((self.decision(id)?, report))
    }

    /// The current time as the store sees it (never before a time already seen).
    pub fn now(&self) -> Result<i64> {
        let high = clock_high(&self.conn, &self.path)?;
        Ok(self.clock.now().max(high))
    }

    /// What retrieval and scoring need of memory now: warm decisions and demoted nodes.
    pub fn snapshot(&self) -> Result<MemorySnapshot> {
        let now = self.now()?;
        let warm = self
            .decisions(Some(Tier::Warm), None)?
            .into_iter()
            // Maintenance may not have run for a while: retention applies at read time too.
            .filter(|d| now.saturating_sub(d.last_used) <= self.policy.warm_seconds)
            .map(|d| {
                let mut text = format!("{} {}", d.task, d.phase);
                if let Some(n) = &d.notes {
                    text.push(' ');
                    text.push_str(n);
                }
                WarmDecision {
                    id: d.id,
                    plan: d.plan,
                    phase: d.phase,
                    last_used: d.last_used,
                    terms: terms(&text),
                    fragments: d.manifest.iter().map(|f| (f.node, f.depth)).collect(),
                }
            })
            .collect();
        let mut stmt = self
            .conn
            .prepare(
                "SELECT f.node, COUNT(*) FROM decision_fragments f JOIN decisions d ON d.id = f.decision
                 WHERE d.corrected IS NOT NULL GROUP BY f.node",
            )
            .map_err(|e| self.err(e))?;
        let demoted: HashMap<NodeId, u32> = stmt
            .query_map([], |r| {
                Ok((
                    NodeId(r.get::<_, i64>(0)? as u64),
                    r.get::<_, i64>(1)? as u32,
                ))
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| self.err(e))?;
        Ok(MemorySnapshot {
            now,
            warm_seconds: self.policy.warm_seconds,
            warm,
            demoted,
        })
    }
}

fn clock_high(conn: &Connection, path: &Path) -> Result<i64> {
    Ok(conn
        .query_row("SELECT value FROM meta WHERE key = 'clock_high'", [], |r| {
            r.get::<_, String>(0)
        })
        .optional()
        .map_err(|e| Error::db(path, e))?
        .and_then(|v| v.parse().ok())
        .unwrap_or(i64::MIN))
}

/// The store's time: the clock, unless it is behind the latest time seen (then that time,
/// and by how much the clock is behind).
fn tick(tx: &Transaction<'_>, path: &Path, clock_now: i64) -> Result<(i64, Option<i64>)> {
    let high = clock_high(tx, path)?;
    if clock_now < high {
        return Ok((high, Some(high - clock_now)));
    }
    tx.execute(
        "INSERT INTO meta(key, value) VALUES ('clock_high', ?1)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        params![clock_now.to_string()],
    )
    .map_err(|e| Error::db(path, e))?;
    Ok((clock_now, None))
}

fn plan_in(conn: &Connection, path: &Path, id: PlanId) -> Result<Plan> {
    conn.query_row(
        "SELECT id, parent, task, created, closed FROM plans WHERE id = ?1",
        params![id.0],
        |r| {
            Ok(Plan {
                id: PlanId(r.get(0)?),
                parent: r.get::<_, Option<i64>>(1)?.map(PlanId),
                task: r.get(2)?,
                created: r.get(3)?,
                closed: r.get(4)?,
            })
        },
    )
    .optional()
    .map_err(|e| Error::db(path, e))?
    .ok_or_else(|| Error::UnknownPlan(id.to_string()))
}

fn phase_in(conn: &Connection, path: &Path, plan: PlanId, seq: i64) -> Result<PhaseRecord> {
    let (name, focus, budget, tokens, refreshed, manifest, created, inputs): (
        String,
        String,
        i64,
        i64,
        i64,
        String,
        i64,
        String,
    ) = conn
        .query_row(
            "SELECT name, focus, budget, tokens, refreshed, manifest, created, inputs FROM phases
             WHERE plan = ?1 AND seq = ?2",
            params![plan.0, seq],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                ))
            },
        )
        .map_err(|e| Error::db(path, e))?;
    let damaged = |e: serde_json::Error| Error::Damaged {
        path: path.to_path_buf(),
        message: format!("phase {seq} of plan {plan}: {e}"),
    };
    let manifest: Vec<FragmentRef> = serde_json::from_str(&manifest).map_err(damaged)?;
    let inputs: PhaseInputs = serde_json::from_str(&inputs).map_err(damaged)?;
    Ok(PhaseRecord {
        plan,
        seq,
        name,
        focus,
        budget: budget.max(0) as usize,
        tokens: tokens.max(0) as usize,
        refreshed: refreshed.max(0) as usize,
        manifest,
        created,
        inputs,
    })
}

fn decision_in(conn: &Connection, path: &Path, id: DecisionId) -> Result<Decision> {
    let row = conn
        .query_row(
            "SELECT plan, phase, task, notes, tier, created, last_used, corrected, correction
             FROM decisions WHERE id = ?1",
            params![id.0],
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, Option<i64>>(7)?,
                    r.get::<_, Option<String>>(8)?,
                ))
            },
        )
        .optional()
        .map_err(|e| Error::db(path, e))?
        .ok_or_else(|| Error::UnknownDecision(id.to_string()))?;
    let tier = Tier::from_name(&row.4).ok_or_else(|| Error::Damaged {
        path: path.to_path_buf(),
        message: format!("decision {id} has tier `{}`", row.4),
    })?;
    let mut stmt = conn
        .prepare_cached(
            "SELECT node, path, start_line, end_line, name, depth, tokens, score
             FROM decision_fragments WHERE decision = ?1 ORDER BY rowid",
        )
        .map_err(|e| Error::db(path, e))?;
    let manifest = stmt
        .query_map(params![id.0], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, u32>(2)?,
                r.get::<_, u32>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, u8>(5)?,
                r.get::<_, u32>(6)?,
                r.get::<_, f64>(7)?,
            ))
        })
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(|e| Error::db(path, e))?
        .into_iter()
        .map(|(node, p, start, end, name, depth, tokens, score)| {
            Ok(FragmentRef {
                node: NodeId(node as u64),
                path: p,
                start_line: start,
                end_line: end,
                name,
                depth: Depth::try_from(depth).map_err(|e| Error::Damaged {
                    path: path.to_path_buf(),
                    message: format!("decision {id}: {e}"),
                })?,
                tokens,
                score,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Decision {
        id,
        plan: PlanId(row.0),
        phase: row.1,
        task: row.2,
        notes: row.3,
        tier,
        created: row.5,
        last_used: row.6,
        corrected: row.7,
        correction: row.8,
        manifest,
    })
}

fn insert_fragments(
    tx: &Transaction<'_>,
    path: &Path,
    id: DecisionId,
    fragments: &[FragmentRef],
) -> Result<()> {
    let mut stmt = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO decision_fragments(decision, node, path, start_line, end_line, name, depth, tokens, score)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )
        .map_err(|e| Error::db(path, e))?;
    for f in fragments {
        stmt.execute(params![
            id.0,
            f.node.0 as i64,
            f.path,
            f.start_line,
            f.end_line,
            f.name,
            f.depth.value(),
            f.tokens,
            f.score
        ])
        .map_err(|e| Error::db(path, e))?;
    }
    Ok(())
}

/// Marks as used now every uncorrected decision with at least half of its fragments in
/// `manifest`.
fn promote(tx: &Transaction<'_>, path: &Path, manifest: &[FragmentRef], now: i64) -> Result<()> {
    let mut shared: BTreeMap<i64, usize> = BTreeMap::new();
    {
        let mut stmt = tx
            .prepare_cached("SELECT decision FROM decision_fragments WHERE node = ?1")
            .map_err(|e| Error::db(path, e))?;
        for f in manifest {
            let ids: Vec<i64> = stmt
                .query_map(params![f.node.0 as i64], |r| r.get(0))
                .and_then(|rows| rows.collect())
                .map_err(|e| Error::db(path, e))?;
            for id in ids {
                *shared.entry(id).or_default() += 1;
            }
        }
    }
    let mut total = tx
        .prepare_cached("SELECT COUNT(*) FROM decision_fragments WHERE decision = ?1")
        .map_err(|e| Error::db(path, e))?;
    let mut touch = tx
        .prepare_cached(
            "UPDATE decisions SET last_used = ?2 WHERE id = ?1 AND corrected IS NULL AND last_used < ?2",
        )
        .map_err(|e| Error::db(path, e))?;
    for (id, n) in shared {
        let all: i64 = total
            .query_row(params![id], |r| r.get(0))
            .map_err(|e| Error::db(path, e))?;
        if 2 * n as i64 >= all {
            touch
                .execute(params![id, now])
                .map_err(|e| Error::db(path, e))?;
        }
    }
    Ok(())
}

/// Applies the tier rules at `now`: updates changed tiers, deletes expired decisions and the
/// plans left with nothing recent.
fn maintain(
    tx: &Transaction<'_>,
    path: &Path,
    policy: &TierPolicy,
    now: i64,
) -> Result<TierReport> {
    let db = |e| Error::db(path, e);
    let mut current: HashMap<i64, i64> = HashMap::new();
    {
        let mut stmt = tx
            .prepare_cached(
                "SELECT p.id, MAX(ph.seq) FROM plans p JOIN phases ph ON ph.plan = p.id
                 WHERE p.closed IS NULL GROUP BY p.id",
            )
            .map_err(db)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(db)?;
        current.extend(rows);
    }
    let rows: Vec<(i64, i64, i64, String, i64, bool)> = {
        let mut stmt = tx
            .prepare_cached(
                "SELECT id, plan, phase_seq, tier, last_used, corrected IS NOT NULL FROM decisions",
            )
            .map_err(db)?;
        stmt.query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .and_then(|rows| rows.collect())
        .map_err(db)?
    };
    let inputs: Vec<TierInput> = rows
        .iter()
        .map(|(id, plan, seq, _, last_used, corrected)| TierInput {
            id: *id,
            current: current.get(plan) == Some(seq),
            corrected: *corrected,
            last_used: *last_used,
        })
        .collect();
    let tiers = assign(&inputs, policy, now);
    let mut report = TierReport {
        now,
        ..TierReport::default()
    };
    let mut set_tier = tx
        .prepare_cached("UPDATE decisions SET tier = ?2 WHERE id = ?1")
        .map_err(db)?;
    let mut delete = tx
        .prepare_cached("DELETE FROM decisions WHERE id = ?1")
        .map_err(db)?;
    let mut delete_fragments = tx
        .prepare_cached("DELETE FROM decision_fragments WHERE decision = ?1")
        .map_err(db)?;
    for ((id, _, _, old, _, _), new) in rows.iter().zip(&tiers) {
        let old = Tier::from_name(old).unwrap_or(Tier::Cold);
        match new {
            Some(t) => {
                report.counts[tier_rank(*t) as usize] += 1;
                if *t != old {
                    if tier_rank(*t) < tier_rank(old) {
                        report.promoted += 1;
                    } else {
                        report.demoted += 1;
                    }
                    set_tier.execute(params![id, t.name()]).map_err(db)?;
                }
            }
            None => {
                report.expired += 1;
                delete_fragments.execute(params![id]).map_err(db)?;
                delete.execute(params![id]).map_err(db)?;
            }
        }
    }
    // Plans with no decision left and no activity within cold retention go too.
    let horizon = now.saturating_sub(policy.cold_seconds);
    report.plans_expired = tx
        .execute(
            "DELETE FROM plans WHERE id NOT IN (SELECT plan FROM decisions)
               AND MAX(created, COALESCE(closed, created),
                       COALESCE((SELECT MAX(created) FROM phases WHERE phases.plan = plans.id), created)) < ?1",
            params![horizon],
        )
        .map_err(db)?;
    if report.plans_expired > 0 {
        tx.execute(
            "DELETE FROM phases WHERE plan NOT IN (SELECT id FROM plans)",
            [],
        )
        .map_err(db)?;
    }
    Ok(report)
}
