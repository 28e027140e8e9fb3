//! The shim's exported functions are exactly `symbols.txt`: every C symbol
//! it interposes is listed there (and in the README's summary), and nothing
//! is exported by accident. The dynamic symbol table is read from the ELF
//! file itself (`.dynsym`), so the test needs no binutils.

use std::collections::BTreeSet;
use std::path::Path;

mod support;
use support::shim;

/// The names listed in `symbols.txt` (comment and blank lines skipped),
/// checked to be sorted and without duplicates.
fn listed() -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("symbols.txt");
    let text = std::fs::read_to_string(&path).expect("symbols.txt");
    let names: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    for w in names.windows(2) {
        assert!(
            w[0] < w[1],
            "symbols.txt is not sorted (or repeats a name): {:?} before {:?}",
            w[0],
            w[1]
        );
    }
    names.into_iter().map(String::from).collect()
}

/// The functions an ELF64 little-endian shared object exports: the defined
/// (`st_shndx` not `SHN_UNDEF`), global or weak, default-visibility
/// `STT_FUNC` entries of its `.dynsym`.
fn exported_functions(so: &Path) -> BTreeSet<String> {
    let b = std::fs::read(so).expect("read the shim");
    assert!(b.len() > 64 && &b[..4] == b"\x7fELF", "not an ELF file");
    assert_eq!(b[4], 2, "not ELFCLASS64");
    assert_eq!(b[5], 1, "not little-endian");
    let u16_at = |o: usize| u16::from_le_bytes(b[o..o + 2].try_into().unwrap());
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap()) as usize;
    // ELF header: e_shoff at 0x28, e_shentsize at 0x3a, e_shnum at 0x3c.
    let (shoff, shentsize, shnum) = (u64_at(0x28), u16_at(0x3a) as usize, u16_at(0x3c) as usize);
    let section = |i: usize| shoff + i * shentsize;
    // Section header: sh_type at 4, sh_offset at 24, sh_size at 32,
    // sh_link at 40, sh_entsize at 56.
    let dynsym = (0..shnum)
        .map(section)
        .find(|&h| u32_at(h + 4) == 11) // SHT_DYNSYM
        .expect("no .dynsym section");
    let (off, size, entsize) = (
        u64_at(dynsym + 24),
        u64_at(dynsym + 32),
        u64_at(dynsym + 56),
    );
    let strtab = u64_at(section(u32_at(dynsym + 40) as usize) + 24);
    assert_eq!(entsize, 24, "Elf64_Sym is 24 bytes");
    let mut out = BTreeSet::new();
    for s in (off..off + size).step_by(entsize) {
        // Elf64_Sym: st_name at 0, st_info at 4, st_other at 5, st_shndx
        // at 6.
        let (name, info, other, shndx) = (u32_at(s) as usize, b[s + 4], b[s + 5], u16_at(s + 6));
        let (bind, ty, visibility) = (info >> 4, info & 0xf, other & 3);
        let defined = shndx != 0;
        let global = bind == 1 || bind == 2; // STB_GLOBAL, STB_WEAK
        if ty == 2 && defined && global && visibility == 0 {
            let start = strtab + name;
            let len = b[start..].iter().position(|&c| c == 0).unwrap();
            out.insert(String::from_utf8(b[start..start + len].to_vec()).unwrap());
        }
    }
    out
}

#[test]
fn exported_functions_are_the_listed_symbols() {
    let listed = listed();
    let exported = exported_functions(shim());
    let missing: Vec<&String> = listed.difference(&exported).collect();
    let unlisted: Vec<&String> = exported.difference(&listed).collect();
    assert!(
        missing.is_empty() && unlisted.is_empty(),
        "symbols.txt and the shim's exports differ:\n  listed but not exported: {missing:?}\n  \
         exported but not listed: {unlisted:?}"
    );
}
