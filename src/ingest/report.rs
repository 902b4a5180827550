//! What an add reports as it goes and when it ends: progress, each
//! failure with its reason, each document added.

use super::*;

/// Where an ingest is: sources settled of all, the one being read, and the
/// rates so far, from which the time left is estimated.
#[derive(Debug, Clone, Default, Serialize, specta::Type)]
pub struct Progress {
    /// Sources settled (written, unchanged or listed as failed).
    pub done: usize,
    pub total: usize,
    /// The source being read.
    pub current: String,
    pub failed: usize,
    /// Chunks embedded and written in this run.
    pub chunks: usize,
    pub elapsed_s: f64,
    pub docs_per_s: f64,
    pub chunks_per_s: f64,
    /// Seconds left at the rate so far; none until a document was written.
    pub eta_s: Option<f64>,
}

/// The one owner of a run's [`Progress`]: counts, rates and the estimate.
pub(super) struct Meter {
    started: Instant,
    pub(super) p: Progress,
}

impl Meter {
    pub(super) fn start(total: usize, failed: usize) -> Meter {
        Meter {
            started: Instant::now(),
            p: Progress {
                total,
                failed,
                ..Progress::default()
            },
        }
    }

    /// One source settled, with the chunks it wrote.
    pub(super) fn settled(&mut self, chunks: usize, failed: usize) {
        self.p.done += 1;
        self.p.chunks += chunks;
        self.p.failed = failed;
    }

    pub(super) fn now(&mut self) -> &Progress {
        let p = &mut self.p;
        p.elapsed_s = self.started.elapsed().as_secs_f64();
        if p.elapsed_s > 0.0 {
            p.docs_per_s = p.done as f64 / p.elapsed_s;
            p.chunks_per_s = p.chunks as f64 / p.elapsed_s;
        }
        p.eta_s = (p.done > 0 && p.docs_per_s > 0.0)
            .then(|| p.total.saturating_sub(p.done) as f64 / p.docs_per_s);
        p
    }
}

#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct Failure {
    pub source: String,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct AddedDocument {
    pub id: i64,
    pub title: String,
    pub chunks: usize,
    /// What did not read although the document did (pages OCR failed on).
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize, specta::Type)]
pub struct AddReport {
    pub added: usize,
    pub unchanged: usize,
    pub failed: Vec<Failure>,
    /// What the folders' scans did not take, with why.
    pub skipped: Vec<Skipped>,
    pub documents: Vec<AddedDocument>,
    /// Sources not reached because the run was cancelled: adding the same
    /// inputs again reads only these (and what changed).
    pub cancelled: Option<usize>,
}
