fn main() {
    // The config sits at the repository root, beside the engine's Cargo.toml.
    println!("cargo:rerun-if-changed=../ui/dist");
    println!("cargo:rerun-if-changed=../tauri.conf.json");
    tauri_build::try_build(tauri_build::Attributes::new().config_path("../tauri.conf.json"))
        .expect("tauri build step");
}
