//! Gives the shared library the soname `libmtcp.so`, so that programs linked with `-lmtcp`
//! record that name (as they do against mTCP's own library) and find it on
//! `LD_LIBRARY_PATH` or under the install prefix.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmtcp.so");
    println!("cargo:rerun-if-changed=build.rs");
}
