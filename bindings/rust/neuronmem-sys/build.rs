//! Links libneuronmem through `pkg-config` (the command, no crate), and compiles
//! bindings/layout/layout_dump.c against the same header with the system C compiler ($CC or `cc`): its output,
//! every public struct's size, published size and field offsets, becomes `C_LAYOUT` for the layout test.
//! `NEURONMEM_INCLUDE_DIR` (for the every-function-is-bound test) is the header directory pkg-config names.
use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

fn pkg_config(args: &[&str]) -> String {
    let out = Command::new("pkg-config")
        .args(args)
        .arg("neuronmem")
        .output()
        .unwrap_or_else(|e| panic!("neuronmem-sys: cannot run pkg-config: {}", e));
    if !out.status.success() {
        panic!(
            "neuronmem-sys: pkg-config {:?} neuronmem failed (set PKG_CONFIG_PATH to the directory of \
             neuronmem.pc): {}",
            args,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).expect("pkg-config output is UTF-8").trim().to_string()
}

fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=CC");
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let layout_src = manifest_dir.join("../../layout/layout_dump.c");
    println!("cargo:rerun-if-changed={}", layout_src.display());

    let libs = pkg_config(&["--libs"]);
    for flag in libs.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={}", dir);
            println!("cargo:libdir={}", dir);
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={}", lib);
        }
    }
    let includedir = pkg_config(&["--variable=includedir"]);
    println!("cargo:rustc-env=NEURONMEM_INCLUDE_DIR={}", includedir);

    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());
    let exe = out_dir.join("layout_dump");
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let cflags = pkg_config(&["--cflags"]);
    let status = Command::new(&cc)
        .args(["-std=c17", "-Wall", "-Werror"])
        .arg(&layout_src)
        .arg("-o")
        .arg(&exe)
        .args(cflags.split_whitespace())
        .status()
        .unwrap_or_else(|e| panic!("neuronmem-sys: cannot run the C compiler {}: {}", cc, e));
    assert!(status.success(), "neuronmem-sys: compiling {} failed", layout_src.display());
    let dump = Command::new(&exe).output().expect("running layout_dump");
    assert!(dump.status.success(), "layout_dump failed");
    let mut rs = String::from("/// (struct, field or \"-\", offset or published size, size) as the C compiler sees.\n");
    rs.push_str("pub const C_LAYOUT: &[(&str, &str, usize, usize)] = &[\n");
    for line in String::from_utf8(dump.stdout).unwrap().lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 4, "layout_dump line {:?}", line);
        rs.push_str(&format!("    (\"{}\", \"{}\", {}, {}),\n", f[0], f[1], f[2], f[3]));
    }
    rs.push_str("];\n");
    fs::write(out_dir.join("c_layout.rs"), rs).unwrap();
}
