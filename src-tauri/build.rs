fn main() {
    // tauri.conf.json sits beside this crate's Cargo.toml, where the Tauri
    // CLI (`make package`) finds it too.
    println!("cargo:rerun-if-changed=../ui/dist");
    println!("cargo:rerun-if-changed=tauri.conf.json");
    tauri_build::try_build(tauri_build::Attributes::new()).expect("tauri build step");
}
