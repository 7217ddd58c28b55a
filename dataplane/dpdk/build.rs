//! Build script of nicemu-dpdk.
//!
//! 1. Finds `libdpdk` (>= 21.11) with pkg-config and links it dynamically.
//! 2. Compiles the C shim (`shim/shim.c`) with DPDK's own cflags (`-march=...`,
//!    `-include rte_config.h`, include paths).
//! 3. Runs bindgen over `shim/shim.h` (which includes the DPDK headers we use), allowlisting
//!    only the items the safe API needs.
//!
//! When pkg-config cannot find libdpdk the crate builds as an empty stub (cfg
//! `nicemu_dpdk_stub`) with a cargo warning, so that `cargo build --workspace` works on
//! machines without DPDK; `dataplane --features dpdk` then fails to compile with a pointer
//! to this cause.

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// DPDK functions (real, exported ones) the safe API calls.
const FUNCTIONS: &[&str] = &[
    "rte_eal_init",
    "rte_eal_cleanup",
    "rte_strerror",
    "rte_thread_register",
    "rte_thread_unregister",
    "rte_socket_id",
    "rte_get_tsc_hz",
    "rte_eth_dev_count_avail",
    "rte_eth_dev_is_valid_port",
    "rte_eth_dev_get_port_by_name",
    "rte_eth_dev_get_name_by_port",
    "rte_eth_dev_socket_id",
    "rte_eth_dev_info_get",
    "rte_eth_dev_configure",
    "rte_eth_dev_adjust_nb_rx_tx_desc",
    "rte_eth_rx_queue_setup",
    "rte_eth_tx_queue_setup",
    "rte_eth_dev_start",
    "rte_eth_dev_stop",
    "rte_eth_dev_close",
    "rte_eth_promiscuous_enable",
    "rte_eth_promiscuous_get",
    "rte_eth_link_get_nowait",
    "rte_eth_macaddr_get",
    "rte_eth_stats_get",
    "rte_eth_xstats_get_names",
    "rte_eth_xstats_get",
    "rte_pktmbuf_pool_create",
    "rte_pktmbuf_free_bulk",
    "rte_mempool_free",
    "rte_mempool_obj_iter",
    "rte_mempool_avail_count",
    "rte_mempool_in_use_count",
];

fn main() {
    println!("cargo:rustc-check-cfg=cfg(nicemu_dpdk_stub)");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=shim/shim.h");
    println!("cargo:rerun-if-changed=shim/shim.c");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");

    let lib = match pkg_config::Config::new()
        .atleast_version("21.11")
        .statik(false)
        .cargo_metadata(true)
        .probe("libdpdk")
    {
        Ok(lib) => lib,
        Err(e) => {
            let one_line = e.to_string().replace('\n', " ");
            println!(
                "cargo:warning=nicemu-dpdk: libdpdk >= 21.11 not found by pkg-config, \
                 building an empty stub ({one_line})"
            );
            println!("cargo:rustc-cfg=nicemu_dpdk_stub");
            // Build again for real once libdpdk-dev is installed (its .pc file lands in one
            // of the standard pkg-config folders), instead of keeping the cached stub.
            for dir in [
                "/usr/lib/x86_64-linux-gnu/pkgconfig",
                "/usr/lib/aarch64-linux-gnu/pkgconfig",
                "/usr/lib/pkgconfig",
                "/usr/local/lib/pkgconfig",
                "/usr/local/lib/x86_64-linux-gnu/pkgconfig",
                "/usr/share/pkgconfig",
            ] {
                if std::path::Path::new(dir).is_dir() {
                    println!("cargo:rerun-if-changed={dir}");
                }
            }
            return;
        }
    };

    let cflags = dpdk_cflags();

    // The shim.
    let mut cc = cc::Build::new();
    cc.file("shim/shim.c").include("shim").warnings(false);
    for p in &lib.include_paths {
        cc.include(p);
    }
    for f in &cflags {
        cc.flag(f);
    }
    cc.compile("nicemu_dpdk_shim");

    // The bindings.
    let mut b = bindgen::Builder::default()
        .header("shim/shim.h")
        .clang_arg("-Ishim")
        .clang_args(cflags.iter().filter(|f| !f.starts_with("-march")))
        .clang_args(
            lib.include_paths
                .iter()
                .map(|p| format!("-I{}", p.display())),
        )
        .allowlist_function("shim_.*")
        .allowlist_type("shim_consts")
        .allowlist_var("RTE_PKTMBUF_HEADROOM")
        .allowlist_var("RTE_MAX_ETHPORTS")
        .allowlist_var("RTE_MAX_LCORE")
        .allowlist_var("RTE_ETH_NAME_MAX_LEN")
        .allowlist_var("RTE_DEV_NAME_MAX_LEN")
        .allowlist_var("RTE_ETH_XSTATS_NAME_SIZE")
        .allowlist_var("RTE_ETH_LINK_.*")
        .allowlist_var("RTE_ETH_SPEED_NUM_.*")
        .allowlist_var("RTE_MBUF_F_.*")
        .allowlist_var("RTE_MEMPOOL_NAMESIZE")
        .allowlist_var("RTE_MEMPOOL_CACHE_MAX_SIZE")
        .allowlist_var("SOCKET_ID_ANY")
        .allowlist_type("rte_eth_rx_mq_mode")
        .allowlist_type("rte_eth_tx_mq_mode")
        .constified_enum_module("rte_eth_rx_mq_mode")
        .constified_enum_module("rte_eth_tx_mq_mode")
        .constified_enum_module("shim_consts")
        .layout_tests(false)
        .derive_default(true)
        .derive_debug(false)
        .generate_comments(false)
        .prepend_enum_name(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for f in FUNCTIONS {
        b = b.allowlist_function(f);
    }
    let bindings = b.generate().expect("bindgen failed on shim/shim.h");
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("bindings.rs");
    bindings.write_to_file(&out).expect("write bindings.rs");
}

/// `pkg-config --cflags libdpdk`, split on whitespace (DPDK's flags contain no quoted spaces).
fn dpdk_cflags() -> Vec<String> {
    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let out = Command::new(pkg_config)
        .args(["--cflags", "libdpdk"])
        .output()
        .expect("run pkg-config --cflags libdpdk");
    assert!(out.status.success(), "pkg-config --cflags libdpdk failed");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}
