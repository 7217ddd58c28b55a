//! Writes every target's seeds under a corpus directory (default `fuzz/corpus`), one file
//! per seed named by its index, for cargo-fuzz to start from:
//! `cargo run -p nicemu-fuzzing --example seeds [DIR]`.

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fuzz/corpus".to_string());
    for (name, _) in nicemu_fuzzing::TARGETS {
        let d = std::path::Path::new(&dir).join(name);
        if let Err(e) = std::fs::create_dir_all(&d) {
            eprintln!("seeds: cannot create {}: {e}", d.display());
            std::process::exit(1);
        }
        let seeds = nicemu_fuzzing::seeds(name);
        for (k, s) in seeds.iter().enumerate() {
            let p = d.join(format!("seed-{k:03}"));
            if let Err(e) = std::fs::write(&p, s) {
                eprintln!("seeds: cannot write {}: {e}", p.display());
                std::process::exit(1);
            }
        }
        println!("{name}: {} seeds in {}", seeds.len(), d.display());
    }
}
