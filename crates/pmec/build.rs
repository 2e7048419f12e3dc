//! `libpmec.so` carries its name as SONAME: a program linked against it by path (as CMake links
//! a `find_library` result) records `libpmec.so`, found on the library path at run time,
//! instead of the build's absolute path.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libpmec.so");
    println!("cargo:rerun-if-changed=build.rs");
}
