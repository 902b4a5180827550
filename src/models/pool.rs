//! Several embedding sessions at once: N worker threads, each with its own
//! ONNX Runtime session on one intra-op thread, fed from one queue of texts.
//!
//! On 2 vCPUs, two intra-op threads in one session measured slower than one
//! (DESIGN.md), so parallelism comes from separate sessions. A caller hands
//! the pool a document's texts and gets a [`Ticket`] back at once; the
//! workers take texts first in, first out, so the earliest document is the
//! first to be done, and the caller keeps reading the next file meanwhile.
//!
//! The workers load their sessions on the first texts they are given: a
//! re-scan of unchanged files never loads the model. The first worker is
//! loaded alone and its resident memory measured; the others start only as
//! far as the memory cap allows.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use serde::Serialize;

use super::{Embedder, ModelConfig, OnnxEmbedder, Side};
use crate::error::{Error, Result};
use crate::fault::{lock, unpoisoned};

/// Embedding workers by default: every core but one, which is left for
/// extraction and the UI; at least one.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get().saturating_sub(1))
        .unwrap_or(1)
        .max(1)
}

/// Resident memory the embedding workers may take together, by default.
/// One all-MiniLM-L6-v2 session on batch 1 measured about 60–80 MB here, so
/// this admits a worker per core on a 16-core laptop.
pub const DEFAULT_WORKER_MEMORY_MB: u64 = 2048;

/// How many workers a pool runs, and why not more.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, specta::Type)]
pub struct PoolSize {
    /// Workers asked for (`--jobs`, Settings).
    pub asked: usize,
    /// Workers running: fewer than asked when the memory cap says so.
    pub running: usize,
    /// The first worker's resident memory, measured as it loaded (MB).
    pub per_worker_mb: f64,
    /// The cap on all workers together (MB).
    pub cap_mb: u64,
}

impl PoolSize {
    /// Workers that fit under `cap_mb` at `per_worker_mb` each, of `asked`;
    /// always at least one, since ingest cannot run on none.
    fn fitting(asked: usize, per_worker_mb: f64, cap_mb: u64) -> usize {
        if per_worker_mb <= 0.0 {
            return asked.max(1);
        }
        ((cap_mb as f64 / per_worker_mb).floor() as usize).clamp(1, asked.max(1))
    }
}

/// Texts handed to the pool, and their vectors as they come back.
pub struct Ticket(Arc<TicketState>);

struct TicketState {
    slots: Mutex<Slots>,
    done: Condvar,
    /// Set when the ticket is dropped unanswered: its queued texts are
    /// skipped, so a cancelled ingest stops within one forward pass.
    abandoned: AtomicBool,
}

struct Slots {
    vectors: Vec<Option<Vec<f32>>>,
    left: usize,
    error: Option<String>,
}

impl Ticket {
    /// A ticket already answered: what an embedder without a pool returns.
    pub fn ready(result: Result<Vec<Vec<f32>>>) -> Ticket {
        let (vectors, error) = match result {
            Ok(v) => (v.into_iter().map(Some).collect(), None),
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
        Ticket::with(Slots {
            vectors,
            left: 0,
            error,
        })
    }

    fn with(slots: Slots) -> Ticket {
        Ticket(Arc::new(TicketState {
            slots: Mutex::new(slots),
            done: Condvar::new(),
            abandoned: AtomicBool::new(false),
        }))
    }

    /// Whether every vector is back (or an error is).
    pub fn is_ready(&self) -> bool {
        let s = lock(&self.0.slots);
        s.left == 0 || s.error.is_some()
    }

    /// The vectors in the order the texts were given, once all are back.
    pub fn wait(self) -> Result<Vec<Vec<f32>>> {
        self.wait_unless(&|| false)
            .expect("a wait that is never stopped ends with the vectors")
    }

    /// [`Ticket::wait`], or `None` as soon as `stop()` says so (looked at
    /// every 100 ms): a cancel does not wait for a long document's vectors.
    pub fn wait_unless(self, stop: &dyn Fn() -> bool) -> Option<Result<Vec<Vec<f32>>>> {
        let mut s = lock(&self.0.slots);
        while s.left > 0 && s.error.is_none() {
            if stop() {
                return None;
            }
            s = unpoisoned(
                self.0
                    .done
                    .wait_timeout(s, std::time::Duration::from_millis(100)),
            )
            .0;
        }
        if let Some(e) = s.error.take() {
            return Some(Err(Error::Embedding(e)));
        }
        Some(
            std::mem::take(&mut s.vectors)
                .into_iter()
                .map(|v| v.ok_or_else(|| Error::Embedding("a vector did not come back".into())))
                .collect(),
        )
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.0.abandoned.store(true, Ordering::Relaxed);
    }
}

/// One text waiting for a worker.
struct Item {
    ticket: Arc<TicketState>,
    index: usize,
    side: Side,
    text: String,
}

struct Queue {
    items: VecDeque<Item>,
    closed: bool,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
}

/// N embedding sessions behind one queue. Implements [`Embedder`], so
/// anything that embeds synchronously (a query, a re-embed) uses it too.
pub struct EmbedPool {
    config: ModelConfig,
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    size: Option<PoolSize>,
}

impl EmbedPool {
    /// A pool of `config.jobs` workers, none started yet.
    pub fn new(config: ModelConfig) -> EmbedPool {
        EmbedPool {
            config,
            shared: Arc::new(Shared {
                queue: Mutex::new(Queue {
                    items: VecDeque::new(),
                    closed: false,
                }),
                ready: Condvar::new(),
            }),
            workers: Vec::new(),
            size: None,
        }
    }

    /// How many workers run and why; `None` until the first texts came.
    pub fn size(&self) -> Option<PoolSize> {
        self.size
    }

    /// Starts the workers on first need: the first alone, measured, then as
    /// many more as the memory cap admits. A model that fails to load is
    /// tried again on the next call (its files are checked first, which is
    /// quick), so installing the models while the app runs is enough.
    fn start(&mut self) -> Result<()> {
        if self.size.is_some() {
            return Ok(());
        }
        let before = resident_mb();
        let first = OnnxEmbedder::load(&self.config)?;
        let per_worker_mb = (resident_mb() - before).max(0.0);
        let asked = self.config.jobs.max(1);
        let running = PoolSize::fitting(asked, per_worker_mb, self.config.worker_memory_mb);
        self.size = Some(PoolSize {
            asked,
            running,
            per_worker_mb,
            cap_mb: self.config.worker_memory_mb,
        });
        self.spawn(Ok(first));
        for _ in 1..running {
            self.spawn(Err(self.config.clone()));
        }
        Ok(())
    }

    /// One worker: with a session already loaded, or the config to load one.
    fn spawn(&mut self, session: std::result::Result<OnnxEmbedder, ModelConfig>) {
        let shared = self.shared.clone();
        let batch = self.config.batch_size.max(1);
        let n = self.workers.len();
        let handle = std::thread::Builder::new()
            .name(format!("carrel-embed-{n}"))
            .spawn(move || work(&shared, session, batch))
            .expect("a thread can be started");
        self.workers.push(handle);
    }

    /// Hands passages to the workers; the ticket answers when all are back.
    pub fn submit(&mut self, texts: Vec<String>) -> Ticket {
        self.submit_side(Side::Passage, texts)
    }

    /// Hands `texts` on `side` to the workers.
    fn submit_side(&mut self, side: Side, texts: Vec<String>) -> Ticket {
        if texts.is_empty() {
            return Ticket::ready(Ok(Vec::new()));
        }
        if let Err(e) = self.start() {
            return Ticket::ready(Err(e));
        }
        let ticket = Ticket::with(Slots {
            vectors: vec![None; texts.len()],
            left: texts.len(),
            error: None,
        });
        let mut q = lock(&self.shared.queue);
        for (index, text) in texts.into_iter().enumerate() {
            q.items.push_back(Item {
                ticket: ticket.0.clone(),
                index,
                side,
                text,
            });
        }
        drop(q);
        self.shared.ready.notify_all();
        ticket
    }
}

impl Drop for EmbedPool {
    fn drop(&mut self) {
        lock(&self.shared.queue).closed = true;
        self.shared.ready.notify_all();
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

impl Embedder for EmbedPool {
    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.submit(texts.iter().map(|t| t.to_string()).collect())
            .wait()
    }

    fn embed_query(&mut self, query: &str) -> Result<Vec<f32>> {
        self.submit_side(Side::Query, vec![query.to_string()])
            .wait()?
            .pop()
            .ok_or_else(|| Error::Embedding("no vector came back for the query".into()))
    }

    fn submit(&mut self, texts: Vec<String>) -> Ticket {
        EmbedPool::submit(self, texts)
    }
}

/// A worker's loop: take up to `batch` texts, embed them, answer their
/// tickets; until the pool is dropped.
fn work(shared: &Shared, session: std::result::Result<OnnxEmbedder, ModelConfig>, batch: usize) {
    let mut session = match session {
        Ok(s) => s,
        Err(config) => match OnnxEmbedder::load(&config) {
            Ok(s) => s,
            Err(e) => {
                // The first worker loaded this very model, so the others
                // carry the work; this one stops.
                tracing::warn!("an embedding worker could not load its model: {e}");
                return;
            }
        },
    };
    loop {
        let items: Vec<Item> = {
            let mut q = lock(&shared.queue);
            loop {
                q.items
                    .retain(|i| !i.ticket.abandoned.load(Ordering::Relaxed));
                if !q.items.is_empty() {
                    let n = q.items.len().min(batch);
                    break q.items.drain(..n).collect();
                }
                if q.closed {
                    return;
                }
                q = unpoisoned(shared.ready.wait(q));
            }
        };
        let (queries, passages): (Vec<Item>, Vec<Item>) =
            items.into_iter().partition(|i| i.side == Side::Query);
        for (side, group) in [(Side::Query, queries), (Side::Passage, passages)] {
            if group.is_empty() {
                continue;
            }
            let texts: Vec<&str> = group.iter().map(|i| i.text.as_str()).collect();
            let result = session.embed_side(side, &texts).map_err(|e| e.to_string());
            answer(group, result);
        }
    }
}

/// Puts a batch's vectors (or its error) into the tickets they belong to.
fn answer(items: Vec<Item>, result: std::result::Result<Vec<Vec<f32>>, String>) {
    match result {
        Ok(vectors) => {
            for (item, v) in items.into_iter().zip(vectors) {
                let mut s = lock(&item.ticket.slots);
                s.vectors[item.index] = Some(v);
                s.left -= 1;
                if s.left == 0 {
                    item.ticket.done.notify_all();
                }
            }
        }
        Err(e) => {
            for item in items {
                let mut s = lock(&item.ticket.slots);
                s.error.get_or_insert_with(|| e.clone());
                item.ticket.done.notify_all();
            }
        }
    }
}

/// This process's resident memory (VmRSS), in MB; 0 where it cannot be read.
pub fn resident_mb() -> f64 {
    memory_mb("VmRSS").unwrap_or(0.0)
}

/// A memory figure of this process from `/proc/self/status` (`VmRSS`, or
/// `VmHWM` for the peak), in MB; none where it cannot be read.
pub fn memory_mb(field: &str) -> Option<f64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_cap_admits_whole_workers_and_never_none() {
        assert_eq!(PoolSize::fitting(4, 100.0, 1000), 4);
        assert_eq!(PoolSize::fitting(4, 300.0, 1000), 3);
        assert_eq!(PoolSize::fitting(4, 2000.0, 1000), 1);
        assert_eq!(PoolSize::fitting(0, 100.0, 1000), 1);
        // Not measurable (no /proc): what was asked.
        assert_eq!(PoolSize::fitting(3, 0.0, 10), 3);
    }

    #[test]
    fn a_ready_ticket_answers_at_once() {
        let t = Ticket::ready(Ok(vec![vec![1.0], vec![2.0]]));
        assert!(t.is_ready());
        assert_eq!(t.wait().unwrap(), vec![vec![1.0], vec![2.0]]);
        let t = Ticket::ready(Err(Error::Embedding("no model".into())));
        assert!(t.wait().unwrap_err().to_string().contains("no model"));
    }
}
