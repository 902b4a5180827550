//! `carrel-cards`: exports what the subject lane serves, for training its
//! cross-encoder on exactly that text (`make reranker`). One JSON line per
//! document: source, title, the card text built by [`carrel::card`], the
//! card's vector from Carrel's own embedder, and the extracted sections
//! (heading path + text). Broken files are reported on stderr and skipped.

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;
use serde::Serialize;
use walkdir::WalkDir;

use carrel::extract::{self, Kind};
use carrel::models::{Embedder, ModelConfig, OnnxEmbedder};

#[derive(Parser)]
struct Args {
    /// Folders to walk; every file in them is one document
    folders: Vec<PathBuf>,
    /// Models folder (default: where `make models` puts them)
    #[arg(long, env = "CARREL_MODELS")]
    models: Option<PathBuf>,
    /// Write JSON lines here
    #[arg(long)]
    out: PathBuf,
}

#[derive(Serialize)]
struct Section {
    heading_path: Vec<String>,
    text: String,
}

#[derive(Serialize)]
struct Doc {
    source: String,
    title: String,
    card: String,
    card_vector: Vec<f32>,
    sections: Vec<Section>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    carrel::extract::worker::serve_if_asked();
    let args = Args::parse();
    let mut docs = Vec::new();
    for folder in &args.folders {
        let mut files: Vec<PathBuf> = WalkDir::new(folder)
            .into_iter()
            .filter_map(|e| {
                e.map_err(|err| eprintln!("skipped an entry of {}: {err}", folder.display()))
                    .ok()
            })
            .filter(|e| e.file_type().is_file())
            .map(|e| e.into_path())
            .filter(|p| {
                !p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .collect();
        files.sort();
        for path in files {
            let bytes = std::fs::read(&path)?;
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            match extract::extract(&name, &bytes, Kind::detect(&path, &bytes)) {
                Ok(doc) => {
                    let card = carrel::card::build(&doc).text();
                    let sections = doc
                        .sections
                        .into_iter()
                        .map(|s| Section {
                            heading_path: s.heading_path,
                            text: s.text,
                        })
                        .collect();
                    docs.push(Doc {
                        source: path.display().to_string(),
                        title: doc.title,
                        card,
                        card_vector: Vec::new(),
                        sections,
                    });
                }
                Err(reason) => eprintln!("skipped {}: {reason}", path.display()),
            }
        }
    }
    let models = match args.models {
        Some(dir) => dir,
        None => ModelConfig::default_dir()?,
    };
    let mut embedder = OnnxEmbedder::load(&ModelConfig::new(models))?;
    let texts: Vec<&str> = docs.iter().map(|d| d.card.as_str()).collect();
    let vectors = embedder.embed(&texts)?;
    for (doc, v) in docs.iter_mut().zip(vectors) {
        doc.card_vector = v;
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(&args.out)?);
    for doc in &docs {
        serde_json::to_writer(&mut out, doc)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    eprintln!(
        "carrel-cards: {} documents to {}",
        docs.len(),
        args.out.display()
    );
    Ok(())
}
