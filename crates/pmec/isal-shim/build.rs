//! The shim is a drop-in `libisal.so.2`.
//!
//! * SONAME `libisal.so.2`: a program that `dlopen`s `libisal.so.2` by name while the shim is
//!   preloaded gets the shim (the loader sees the name already loaded), and an installed copy
//!   named `libisal.so.2` first on `LD_LIBRARY_PATH` serves programs linked against ISA-L.
//! * Since the system ISA-L is then not loaded for the program, the shim exports every other
//!   function the system library exports (CRC, igzip, RAID, ...) as a jump through a table that
//!   is filled at load time from the real library, opened by its path: the functions pmec does
//!   not implement behave exactly as before. The list is read from the system library with
//!   `nm -D` at build time (`PMEC_ISAL_REAL` names another copy); without one, the shim
//!   forwards nothing.
use std::path::{Path, PathBuf};
use std::process::Command;

const CANDIDATES: [&str; 4] = [
    "/usr/lib/x86_64-linux-gnu/libisal.so.2",
    "/usr/lib64/libisal.so.2",
    "/usr/local/lib/libisal.so.2",
    "/usr/lib/libisal.so.2",
];

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libisal.so.2");
    println!("cargo:rerun-if-changed=src/lib.rs");
    println!("cargo:rerun-if-env-changed=PMEC_ISAL_REAL");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("forward.rs");
    let real = std::env::var("PMEC_ISAL_REAL")
        .ok()
        .or_else(|| {
            CANDIDATES
                .iter()
                .find(|p| Path::new(p).exists())
                .map(|p| p.to_string())
        })
        .unwrap_or_default();
    let x86_linux = std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("x86_64")
        && std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux");
    // The functions the shim implements itself.
    let src = std::fs::read_to_string("src/lib.rs").unwrap();
    let own: Vec<&str> = src
        .lines()
        .filter_map(|l| l.split("extern \"C\" fn ").nth(1))
        .filter_map(|rest| rest.split('(').next())
        .collect();
    let mut names: Vec<String> = Vec::new();
    if x86_linux && !real.is_empty() {
        println!("cargo:rerun-if-changed={real}");
        match Command::new("nm")
            .args(["-D", "--defined-only", &real])
            .output()
        {
            Ok(o) if o.status.success() => {
                for l in String::from_utf8_lossy(&o.stdout).lines() {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    if f.len() == 3 && f[1] == "T" && !own.contains(&f[2]) {
                        names.push(f[2].to_string());
                    }
                }
            }
            _ => println!("cargo:warning=nm -D {real} failed: the shim forwards no ISA-L function"),
        }
    }
    names.sort();
    names.dedup();
    let mut code = String::new();
    code.push_str(&format!(
        "/// The system ISA-L the forwarded functions come from.\n\
         pub(crate) const REAL_ISAL: &str = {real:?};\n\
         /// The forwarded functions, in table order.\n\
         pub(crate) static FORWARDED: [&str; {}] = [{}];\n\
         /// Their addresses in the real library (filled at load time).\n\
         pub(crate) static mut FORWARD_TABLE: [usize; {}] = [0; {}];\n",
        names.len(),
        names
            .iter()
            .map(|n| format!("{n:?}"))
            .collect::<Vec<_>>()
            .join(", "),
        names.len(),
        names.len()
    ));
    for (i, n) in names.iter().enumerate() {
        code.push_str(&format!(
            "/// Forwarded to the system ISA-L's `{n}`.\n\
             #[no_mangle]\n\
             #[unsafe(naked)]\n\
             pub unsafe extern \"C\" fn {n}() {{\n    \
             core::arch::naked_asm!(\n        \
             \"mov rax, qword ptr [rip + {{t}} + {o}]\",\n        \
             \"test rax, rax\",\n        \
             \"jz 2f\",\n        \
             \"jmp rax\",\n        \
             // First call before the load-time fill (another library's constructor): fill\n        \
             // the table now, keeping the argument registers, then jump.\n        \
             \"2:\",\n        \
             \"push rdi\", \"push rsi\", \"push rdx\", \"push rcx\", \"push r8\", \"push r9\",\n        \
             \"sub rsp, 8\",\n        \
             \"call {{init}}\",\n        \
             \"add rsp, 8\",\n        \
             \"pop r9\", \"pop r8\", \"pop rcx\", \"pop rdx\", \"pop rsi\", \"pop rdi\",\n        \
             \"jmp qword ptr [rip + {{t}} + {o}]\",\n        \
             t = sym FORWARD_TABLE,\n        \
             init = sym crate::forward::fill_forward_table,\n    \
             );\n\
             }}\n",
            o = 8 * i
        ));
    }
    std::fs::write(out, code).unwrap();
}
