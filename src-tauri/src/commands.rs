//! Tauri commands: each one line (or close) over the engine. Every command
//! is async and runs the engine on a blocking worker, never on the UI thread.

use carrel::answer::history::ChatTurn;
use carrel::answer::{self, Answer, AnswerEvent, MentionOption};
use carrel::foreign::ask::Elsewhere;
use carrel::foreign::{self, Declared, Kind, Metric, Scope, SourceView};
use carrel::ingest::{AddReport, Progress};
use carrel::lanes::{Detail, MatchView};
use carrel::library::Listed;
use carrel::library::shelf::Survey;
use carrel::mention::{self, Mention, Resolution};
use carrel::store::Watch;
use carrel::{Doctor, DocumentText, Library, LibraryDirFrom};
use serde::Serialize;
use tauri::ipc::Channel;
use tauri::{AppHandle, State};
use tauri_plugin_dialog::DialogExt;
use tauri_plugin_opener::OpenerExt;

use crate::error::{AppError, ErrorKind, Result};
use crate::state::{AppState, Settings, SettingsProblem, WatcherHealth, lock};

/// Hits per lane in the match panel.
const MATCH_TOP_K: usize = 8;
/// Rows in the `@` autocomplete.
const MENTION_OPTIONS: usize = 8;

/// Runs `f` on the shared library on a blocking worker.
async fn with_library<T, F>(state: &AppState, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&mut Library) -> carrel::Result<T> + Send + 'static,
{
    let lib = state.library();
    blocking(move || f(&mut lock(&lib)).map_err(AppError::from)).await
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tauri::async_runtime::spawn_blocking(f)
        .await
        .map_err(|e| AppError::new(ErrorKind::Internal, format!("the worker stopped: {e}")))?
}

#[tauri::command]
#[specta::specta]
pub async fn list_documents(state: State<'_, AppState>) -> Result<Vec<Listed>> {
    with_library(&state, |l| l.listed()).await
}

#[tauri::command]
#[specta::specta]
pub async fn read_document(state: State<'_, AppState>, id: i64) -> Result<DocumentText> {
    with_library(&state, move |l| l.read(id)).await
}

#[tauri::command]
#[specta::specta]
pub async fn remove_document(state: State<'_, AppState>, id: i64) -> Result<()> {
    with_library(&state, move |l| l.remove(id)).await
}

/// Adds files, folders and URLs to the library in use, or to the library
/// on the shelf `into` names. With `keep_in_sync`, each folder and URL of
/// the library in use becomes a watch (or finds its existing one) and is
/// synced now, so the watcher keeps it up to date afterwards; files, and
/// anything added to another library, are added once. Progress goes to
/// `on_progress`; failures are in the report, by name and reason. Runs on
/// its own connection so the rest of the app stays responsive.
#[tauri::command]
#[specta::specta]
pub async fn add_sources(
    state: State<'_, AppState>,
    inputs: Vec<String>,
    keep_in_sync: bool,
    into: Option<String>,
    on_progress: Channel<Progress>,
) -> Result<AddReport> {
    let (config, sync) =
        carrel::library::shelf::import_target(state.settings().library_config()?, into.as_deref())?;
    let keep_in_sync = keep_in_sync && sync == carrel::library::shelf::Sync::Watched;
    let gate = state.sync_gate();
    // The handle exists before the library is opened (on the worker, not
    // here), so a Cancel pressed at once is not lost.
    let cancel = carrel::ingest::Cancel::default();
    state.import_started(cancel.clone());
    let report = blocking(move || {
        let mut lib = Library::open(config)?;
        lib.set_cancel(cancel);
        // A closed window is not a failed ingest: keep going.
        let mut progress = |p: &Progress| {
            let _ = on_progress.send(p.clone());
        };
        Ok(carrel::watch::add_inputs(
            &mut lib,
            &inputs,
            keep_in_sync,
            &gate,
            &mut progress,
        )?)
    })
    .await;
    state.import_finished();
    report
}

/// The library's embedder, those it can switch to, and what a switch costs.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct EmbedderChoice {
    /// The embedder the library's vectors are made with.
    pub embedder: String,
    pub options: Vec<EmbedderOption>,
    /// Documents a switch re-embeds: every one with text.
    pub documents: u32,
}

#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct EmbedderOption {
    pub name: String,
    /// What to run when its files are missing; none when installed.
    pub missing: Option<String>,
}

#[tauri::command]
#[specta::specta]
pub async fn embedder_choice(state: State<'_, AppState>) -> Result<EmbedderChoice> {
    with_library(&state, |l| {
        let documents = l.list()?.iter().filter(|d| d.chunks > 0).count() as u32;
        let options = carrel::models::EmbedderKind::ALL
            .iter()
            .map(|&kind| {
                let models = carrel::models::ModelConfig {
                    embedder: kind,
                    ..l.config().models.clone()
                };
                EmbedderOption {
                    name: kind.name().to_string(),
                    missing: carrel::models::Fingerprints::of(&models)
                        .err()
                        .map(|_| format!("not installed: {}", kind.install_hint(models.from))),
                }
            })
            .collect();
        Ok(EmbedderChoice {
            embedder: l.embedder().name().to_string(),
            options,
            documents,
        })
    })
    .await
}

/// Switches the library in use to `embedder` and re-embeds every document
/// with progress; meanwhile both lanes say "re-embedding N of M". Returns
/// how many documents were re-embedded (0 when it already used it).
#[tauri::command]
#[specta::specta]
pub async fn switch_embedder(
    state: State<'_, AppState>,
    embedder: String,
    on_progress: Channel<Progress>,
) -> Result<u32> {
    let kind = carrel::models::EmbedderKind::parse(&embedder).ok_or_else(|| {
        AppError::new(
            ErrorKind::BadInput,
            format!("no embedder is called {embedder}"),
        )
    })?;
    let config = state.settings().library_config()?;
    let mut lib = blocking(move || {
        let mut lib = Library::open(config)?;
        lib.set_embedder(kind)?;
        Ok(lib)
    })
    .await?;
    // The shared library reads the new embedder now, so the lanes say what
    // is stale while the vectors are made again.
    state.reopen_library()?;
    blocking(move || {
        let mut progress = |p: &Progress| {
            let _ = on_progress.send(p.clone());
        };
        Ok(lib.refresh(&mut progress)? as u32)
    })
    .await
}

/// Stops the running import after the document it is writing: what was
/// added stays, and adding the same files again goes on from there. False
/// when no import runs.
#[tauri::command]
#[specta::specta]
pub async fn cancel_import(state: State<'_, AppState>) -> Result<bool> {
    Ok(state.cancel_import())
}

/// The watched folders and URLs, with when each last synced and why it
/// failed, if it did.
#[tauri::command]
#[specta::specta]
pub async fn list_watches(state: State<'_, AppState>) -> Result<Vec<Watch>> {
    with_library(&state, |l| l.watches()).await
}

/// The libraries on this machine's shelf, the one in use first: name,
/// owner, documents, or why one cannot be opened or reached.
#[tauri::command]
#[specta::specta]
pub async fn list_libraries(state: State<'_, AppState>) -> Result<Survey> {
    // Not under the library's lock: a library on another hub may be slow to
    // answer, and nothing else should wait for it.
    let dir = state.settings().library_config()?.dir;
    blocking(move || Ok(carrel::library::shelf::surveyed(&dir)?)).await
}

/// Puts a library that another machine serves (`carrel serve`) on the
/// shelf, once its hub says the token opens it; the shelf as it stands then.
#[tauri::command]
#[specta::specta]
pub async fn add_remote_library(
    state: State<'_, AppState>,
    url: String,
    kb: String,
    token: String,
) -> Result<Survey> {
    let dir = state.settings().library_config()?.dir;
    blocking(move || {
        carrel::library::shelf::add_remote(&dir, &url, &kb, &token)?;
        Ok(carrel::library::shelf::surveyed(&dir)?)
    })
    .await
}

/// Stops watching; the documents stay.
#[tauri::command]
#[specta::specta]
pub async fn remove_watch(state: State<'_, AppState>, id: i64) -> Result<()> {
    with_library(&state, move |l| l.remove_watch(id)).await
}

#[tauri::command]
#[specta::specta]
pub async fn match_query(state: State<'_, AppState>, query: String) -> Result<MatchView> {
    // The words an answer would retrieve with: mention tokens taken out.
    with_library(&state, move |l| {
        Ok(l.match_query(&mention::strip(&query), MATCH_TOP_K)?
            .view(Detail::Explain))
    })
    .await
}

/// A question whose `@kb:` tokens name libraries, explained library by
/// library for the match panel (each its route and its own two lanes, or
/// what its hub returned); none when it names none, and the panel explains
/// it with the library in use ([`match_query`]). The engine's parser
/// decides, never the page. The libraries named are opened for the
/// question alone, without the library in use's lock.
#[tauri::command]
#[specta::specta]
pub async fn explain_across(
    state: State<'_, AppState>,
    message: String,
) -> Result<Option<carrel::library::Across>> {
    let home = state.settings().library_config()?;
    blocking(move || {
        Ok(carrel::library::explain_across(
            &home,
            &message,
            MATCH_TOP_K,
            Detail::Explain,
        )?)
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn complete_mention(
    state: State<'_, AppState>,
    partial: String,
) -> Result<Vec<MentionOption>> {
    with_library(&state, move |l| {
        answer::complete_mention(l, &partial, MENTION_OPTIONS)
    })
    .await
}

/// One mention in a message, what it resolved to, and the engine's sentence
/// for it (empty when resolved).
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct MentionCheck {
    pub mention: Mention,
    pub resolution: Resolution,
    pub message: String,
}

#[tauri::command]
#[specta::specta]
pub async fn check_mentions(
    state: State<'_, AppState>,
    message: String,
) -> Result<Vec<MentionCheck>> {
    with_library(&state, move |l| {
        Ok(answer::resolve_mentions(l, &message)?
            .into_iter()
            .map(|(m, r)| MentionCheck {
                message: match r {
                    Resolution::Resolved { .. } => String::new(),
                    _ => mention::describe(&m.token, &r),
                },
                mention: m,
                resolution: r,
            })
            .collect())
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn ask(
    state: State<'_, AppState>,
    message: String,
    on_progress: Channel<AnswerEvent>,
) -> Result<Answer> {
    let lib = state.library();
    let settings = state.settings();
    let (answerer, note) = settings.answerer(&settings.library_config()?.models)?;
    let stop = state.answer_started();
    let asked = blocking(move || {
        // A closed window is no reason to stop: the turn is kept.
        let mut on = |p: carrel::answer::Progress| {
            let _ = on_progress.send(p.into());
        };
        let mut answer = carrel::library::ask_shared(&lib, &message, &answerer, &stop, &mut on)?;
        answer.notes.extend(note);
        Ok(answer)
    })
    .await;
    state.answer_finished();
    asked
}

/// Stops the model writing the answer now: what it wrote is kept, marked
/// as stopped. False when no answer is being written.
#[tauri::command]
#[specta::specta]
pub async fn stop_answer(state: State<'_, AppState>) -> Result<bool> {
    Ok(state.stop_answer())
}

/// The kept chat of this library, oldest first.
#[tauri::command]
#[specta::specta]
pub async fn chat_history(state: State<'_, AppState>) -> Result<Vec<ChatTurn>> {
    with_library(&state, |l| l.chat_history()).await
}

/// Forgets this library's chat; returns how many turns went.
#[tauri::command]
#[specta::specta]
pub async fn clear_chat(state: State<'_, AppState>) -> Result<u32> {
    with_library(&state, |l| l.clear_chat().map(|n| n as u32)).await
}

#[tauri::command]
#[specta::specta]
pub async fn doctor(state: State<'_, AppState>) -> Result<Doctor> {
    with_library(&state, |l| l.doctor()).await
}

/// Settings → About: the version, the commit and the fingerprints of the
/// model files in use (hashed when asked, off the UI thread).
#[tauri::command]
#[specta::specta]
pub async fn about(state: State<'_, AppState>) -> Result<carrel::provenance::Provenance> {
    let models = state.settings().library_config()?.models;
    blocking(move || Ok(carrel::provenance::Provenance::of(&models))).await
}

/// The kinds of file Carrel reads, as one phrase for people: the empty
/// Library page says it, from the engine's one list (the file dialog's too).
#[tauri::command]
#[specta::specta]
pub fn readable_kinds() -> Result<String> {
    Ok(carrel::extract::readable_kinds())
}

#[tauri::command]
#[specta::specta]
pub async fn pick_files(app: AppHandle) -> Result<Vec<String>> {
    blocking(move || {
        Ok(app
            .dialog()
            .file()
            .set_title("Add files to Carrel")
            .add_filter(
                "Documents",
                &carrel::extract::EXTENSIONS
                    .iter()
                    .map(|(ext, _)| *ext)
                    .collect::<Vec<_>>(),
            )
            .blocking_pick_files()
            // None: the user closed the dialog without picking.
            .unwrap_or_default()
            .into_iter()
            .map(|p| p.to_string())
            .collect())
    })
    .await
}

#[tauri::command]
#[specta::specta]
pub async fn pick_folder(app: AppHandle) -> Result<Option<String>> {
    blocking(move || {
        Ok(app
            .dialog()
            .file()
            .set_title("Add a folder to Carrel")
            .blocking_pick_folder()
            .map(|p| p.to_string()))
    })
    .await
}

/// Opens a document's source in the system's viewer. For a URL to a PDF the
/// page is appended as `#page=N`, which browsers honour; local viewers get
/// the file only.
#[tauri::command]
#[specta::specta]
pub async fn open_original(
    app: AppHandle,
    state: State<'_, AppState>,
    id: i64,
    page: Option<u32>,
) -> Result<()> {
    let doc = with_library(&state, move |l| l.document(id)).await?;
    let opened = if carrel::ingest::is_url(&doc.source) {
        let url = match page {
            Some(p) if doc.kind.as_deref() == Some("pdf") => format!("{}#page={p}", doc.source),
            _ => doc.source.clone(),
        };
        app.opener().open_url(url, None::<&str>)
    } else {
        app.opener().open_path(&doc.source, None::<&str>)
    };
    opened.map_err(|e| {
        AppError::new(
            ErrorKind::NotFound,
            format!("could not open {}: {e}", doc.source),
        )
    })
}

/// Settings plus where things actually are.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct AppInfo {
    pub settings: Settings,
    /// The library folder in use (the environment can override settings).
    pub library_dir: String,
    pub library_from_env: bool,
    pub models_dir: String,
    pub answerer: String,
    pub version: String,
    /// Embedding workers when the setting is empty: every core but one.
    pub default_jobs: u32,
}

fn app_info(state: &AppState) -> Result<AppInfo> {
    let settings = state.settings();
    let config = settings.library_config()?;
    let (_, from) = settings.library_in_use()?;
    Ok(AppInfo {
        library_dir: config.dir.display().to_string(),
        library_from_env: from == LibraryDirFrom::Env,
        models_dir: config.models.dir.display().to_string(),
        answerer: match settings.answerer(&config.models) {
            Ok((answerer, None)) => answerer.name(),
            Ok((answerer, Some(note))) => format!("{} ({note})", answerer.name()),
            Err(e) => e.message,
        },
        version: env!("CARGO_PKG_VERSION").to_string(),
        default_jobs: carrel::models::pool::default_jobs() as u32,
        settings,
    })
}

#[tauri::command]
#[specta::specta]
pub async fn get_settings(state: State<'_, AppState>) -> Result<AppInfo> {
    app_info(&state)
}

#[tauri::command]
#[specta::specta]
pub async fn set_settings(
    app: AppHandle,
    state: State<'_, AppState>,
    settings: Settings,
) -> Result<AppInfo> {
    if settings.threads == 0 || settings.threads > 64 {
        return Err(AppError::new(
            ErrorKind::BadInput,
            "threads must be between 1 and 64",
        ));
    }
    if settings.answerer == answer::AnswererChoice::Server {
        let url = settings.llm_url.as_deref().unwrap_or("").trim();
        let model = settings.llm_model.as_deref().unwrap_or("").trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) || model.is_empty() {
            return Err(AppError::new(
                ErrorKind::BadInput,
                "a server answers only with its URL (http:// or https://, up to the API version, e.g. http://localhost:8080/v1) and a model name",
            ));
        }
    }
    state.apply(settings)?;
    // The watcher follows the library (and its thread count).
    crate::spawn_watcher(&app);
    app_info(&state)
}

/// Called by the UI once it has painted; returns milliseconds since the
/// process started (the cold-start figure), and logs it.
#[tauri::command]
#[specta::specta]
pub async fn first_paint(state: State<'_, AppState>) -> Result<f64> {
    let ms = state.started.elapsed().as_secs_f64() * 1000.0;
    tracing::info!(ms, "first paint");
    Ok(ms)
}

/// Why `settings.json` was not used at startup, if it was not: the app
/// then runs on the defaults, and the file is kept aside.
#[tauri::command]
#[specta::specta]
pub async fn settings_problem(state: State<'_, AppState>) -> Result<Option<SettingsProblem>> {
    Ok(state.settings_problem())
}

/// Whether folders and URLs are being kept in sync, or why not.
#[tauri::command]
#[specta::specta]
pub async fn watcher_health(state: State<'_, AppState>) -> Result<WatcherHealth> {
    Ok(state.watcher_health())
}

/// Starts the watcher again after it stopped on its own.
#[tauri::command]
#[specta::specta]
pub async fn restart_watcher(app: AppHandle, state: State<'_, AppState>) -> Result<WatcherHealth> {
    crate::spawn_watcher(&app);
    Ok(state.watcher_health())
}

/// The foreign sources as the Sources screen shows them, and a sentence
/// about what the last action did (a schema that could not be read, a
/// connection test's answer).
#[derive(Debug, Serialize, specta::Type)]
pub struct SourcesNow {
    pub sources: Vec<SourceView>,
    pub note: Option<String>,
    /// The pre-rerank field's label for a new source, by store and metric.
    pub limit_labels: Vec<foreign::LimitLabel>,
}

/// A source as the Sources screen's form declares it: a Chroma collection
/// (`collection`, and optionally `tenant` and `database`), or a PostgreSQL
/// table's pgvector column (`table`, `vector_column`).
#[derive(Debug, serde::Deserialize, specta::Type)]
pub struct SourceInput {
    pub name: String,
    pub store: foreign::Store,
    pub url: String,
    pub collection: Option<String>,
    pub tenant: Option<String>,
    pub database: Option<String>,
    pub table: Option<String>,
    pub vector_column: Option<String>,
    pub metric: Metric,
    pub dimensions: u32,
    pub text_key: Option<String>,
    pub scope_key: Option<String>,
    pub scope_value: Option<String>,
    pub limit: Option<f32>,
}

fn sources_now(l: &Library, note: Option<String>) -> carrel::Result<SourcesNow> {
    Ok(SourcesNow {
        sources: l.foreign_source_views()?,
        note,
        limit_labels: foreign::limit_labels(),
    })
}

/// The foreign sources' answer to the match panel's query: their own list
/// (Elsewhere), never sorted with the lanes, and what each source did.
#[tauri::command]
#[specta::specta]
pub async fn ask_elsewhere(state: State<'_, AppState>, query: String) -> Result<Elsewhere> {
    with_library(&state, move |l| l.ask_elsewhere(&mention::strip(&query))).await
}

#[tauri::command]
#[specta::specta]
pub async fn list_foreign_sources(state: State<'_, AppState>) -> Result<SourcesNow> {
    with_library(&state, |l| sources_now(l, None)).await
}

/// Declares a source or changes one; its schema is read on save.
#[tauri::command]
#[specta::specta]
pub async fn declare_foreign_source(
    state: State<'_, AppState>,
    input: SourceInput,
) -> Result<SourcesNow> {
    let text = |s: Option<String>| s.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let name = input.name.trim().to_string();
    let url = input.url.trim().to_string();
    let at = match input.store {
        foreign::Store::Chroma => text(input.collection).map(|collection| Kind::Chroma {
            url: url.clone(),
            tenant: text(input.tenant).unwrap_or_else(|| "default_tenant".into()),
            database: text(input.database).unwrap_or_else(|| "default_database".into()),
            collection,
        }),
        foreign::Store::Pgvector => {
            text(input.table)
                .zip(text(input.vector_column))
                .map(|(table, vector_column)| Kind::Pgvector {
                    url: url.clone(),
                    table,
                    vector_column,
                })
        }
    };
    let (false, false, Some(at)) = (name.is_empty(), url.is_empty(), at) else {
        return Err(AppError::new(
            ErrorKind::BadInput,
            match input.store {
                foreign::Store::Chroma => {
                    "a Chroma source needs a name, the server's URL and the collection's name"
                }
                foreign::Store::Pgvector => {
                    "a pgvector source needs a name, the PostgreSQL URL, the table and its vector column"
                }
            },
        ));
    };
    let scope = match (text(input.scope_key), text(input.scope_value)) {
        (Some(key), Some(value)) => Some(Scope { key, value }),
        (None, None) => None,
        _ => {
            return Err(AppError::new(
                ErrorKind::BadInput,
                "a scope needs both its key and the value points must carry",
            ));
        }
    };
    let declared = Declared {
        metric: input.metric,
        dimensions: input.dimensions,
        text_key: text(input.text_key),
        scope,
        limit: input.limit.map(foreign::CollectionScore::new),
        embedder: foreign::EMBEDDER.to_string(),
    };
    with_library(&state, move |l| {
        let failure = l.declare_foreign_source(&name, at, declared)?;
        sources_now(
            l,
            failure.map(|r| format!("Saved, but its schema could not be read: {r}")),
        )
    })
    .await
}

/// Whether the server answers and holds the collection, as a sentence.
#[tauri::command]
#[specta::specta]
pub async fn test_foreign_source(state: State<'_, AppState>, name: String) -> Result<SourcesNow> {
    with_library(&state, move |l| {
        let note = match l.test_foreign_source(&name)? {
            Ok(()) => format!("{name}: the server answers and holds the collection."),
            Err(reason) => format!("{name}: {reason}"),
        };
        sources_now(l, Some(note))
    })
    .await
}

/// Reads the collection's real metric, dimensions and payload keys.
#[tauri::command]
#[specta::specta]
pub async fn discover_foreign_source(
    state: State<'_, AppState>,
    name: String,
) -> Result<SourcesNow> {
    with_library(&state, move |l| {
        l.discover_foreign_source(&name)?;
        sources_now(l, Some(format!("{name}: schema read.")))
    })
    .await
}

/// Takes what discovery read as the declaration.
#[tauri::command]
#[specta::specta]
pub async fn adopt_foreign_source(state: State<'_, AppState>, name: String) -> Result<SourcesNow> {
    with_library(&state, move |l| {
        let note = if l.adopt_foreign_source(&name)? {
            format!("{name}: the values discovery read are now its declaration.")
        } else {
            format!("{name}: nothing has been read to adopt yet; read its schema first.")
        };
        sources_now(l, Some(note))
    })
    .await
}

/// Records who accepts that an unscoped source may return any point.
#[tauri::command]
#[specta::specta]
pub async fn acknowledge_foreign_source(
    state: State<'_, AppState>,
    name: String,
    by: String,
) -> Result<SourcesNow> {
    with_library(&state, move |l| {
        let ack = l.acknowledge_foreign_source(&name, &by)?;
        sources_now(l, Some(format!("{} accepted: {}", ack.by, ack.sentence)))
    })
    .await
}

/// Turns a source on (refused with the reason when it cannot be read
/// usefully or safely) or off.
#[tauri::command]
#[specta::specta]
pub async fn set_foreign_source_enabled(
    state: State<'_, AppState>,
    name: String,
    enabled: bool,
) -> Result<SourcesNow> {
    with_library(&state, move |l| {
        l.set_foreign_source_enabled(&name, enabled)?;
        sources_now(l, None)
    })
    .await
}

/// Forgets a source; its collection is not touched.
#[tauri::command]
#[specta::specta]
pub async fn remove_foreign_source(state: State<'_, AppState>, name: String) -> Result<SourcesNow> {
    with_library(&state, move |l| {
        l.remove_foreign_source(&name)?;
        sources_now(
            l,
            Some(format!("Forgot {name}; its collection is untouched.")),
        )
    })
    .await
}
