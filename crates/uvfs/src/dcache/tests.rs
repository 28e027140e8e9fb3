use super::*;

/// Two cache lines at most: the child-list pointer and slot went into
/// what was padding.
#[test]
fn dentry_fits_two_cache_lines() {
    assert_eq!(std::mem::align_of::<Dentry>(), 64);
    assert!(
        std::mem::size_of::<Dentry>() <= 128,
        "{} bytes",
        std::mem::size_of::<Dentry>()
    );
}

/// The straightforward definition [`hash_component`] must match: a
/// byte scan for the `/`, then 8-byte chunks, then the zero-padded
/// tail with the length.
fn reference(parent: *const Dentry, path: &[u8]) -> (usize, u64) {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let len = path.iter().position(|&c| c == b'/').unwrap_or(path.len());
    let name = &path[..len];
    let mut h = (parent.addr() as u64).wrapping_mul(K);
    let mut chunks = name.chunks_exact(8);
    for c in &mut chunks {
        h = (h.rotate_left(5) ^ u64::from_le_bytes(c.try_into().unwrap())).wrapping_mul(K);
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h.rotate_left(5) ^ u64::from_le_bytes(tail) ^ len as u64).wrapping_mul(K);
    (len, h ^ (h >> 29))
}

/// Paths of every length up to 40 over an alphabet rich in `/`, `.`,
/// NUL-free high bytes and bytes one away from `/` (the zero-byte
/// trick's borrow cases).
#[test]
fn component_hash_and_compare_match_the_reference() {
    let alphabet = [
        b'/',
        b'.',
        b'a',
        b'.' + 2,
        b'/' - 1,
        b'/' + 1,
        0xff,
        0x80,
        0x2e,
        b'z',
        1,
    ];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let parent = 0x1234_5678usize as *const Dentry;
    for _ in 0..20_000 {
        let len = (next() % 41) as usize;
        let path: Vec<u8> = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        assert_eq!(
            hash_component(parent, &path),
            reference(parent, &path),
            "{path:?}"
        );
        let other: Vec<u8> = if next() % 2 == 0 {
            let mut o = path.clone();
            if let Some(b) = o.get_mut((next() as usize) % len.max(1)) {
                *b ^= 1 << (next() % 8);
            }
            o
        } else {
            path.clone()
        };
        assert_eq!(name_eq(&path, &other), path == other, "{path:?} {other:?}");
        assert_eq!(name_eq(&path, &path[..len / 2]), len == 0);
    }
    assert_eq!(
        name_hash(parent, b"willitscale.0"),
        reference(parent, b"willitscale.0").1
    );
}

/// `hash_len` keeps the hash's low 32 bits (so the bucket) and the
/// length; an inline word gives the bytes back, and two names of up to
/// 8 bytes have the same word and length only if they are equal.
#[test]
fn hash_len_and_inline_words() {
    let h = 0xdead_beef_0123_4567u64;
    for len in 0..=255 {
        let hl = hash_len(h, len);
        assert_eq!(hl_len(hl), len);
        assert_eq!(hl & u64::from(u32::MAX), h & u64::from(u32::MAX));
    }
    let names: [&[u8]; 7] = [
        b"a",
        b"b",
        b"ab",
        b"f0001234",
        b"f0001235",
        b"abcdefg",
        b"abcdefgh",
    ];
    for a in names {
        let w = inline_word(a);
        assert_eq!(&w.to_le_bytes()[..a.len()], a);
        assert!(w.to_le_bytes()[a.len()..].iter().all(|&b| b == 0));
        for b in names {
            let same = hash_len(0, a.len()) == hash_len(0, b.len()) && w == inline_word(b);
            assert_eq!(same, a == b, "{a:?} {b:?}");
        }
    }
}

/// The slab: a slot given back is handed out again before any new slab
/// is carved. (Not under shuttle, whose locks need a scenario.)
#[cfg(not(shuttle))]
#[test]
fn slab_slot_is_reused() {
    let vfs = crate::Vfs::new(crate::FastPaths::seeds());
    let dc = &vfs.caches().dcache;
    let root = vfs.root();
    let fresh = || {
        dc.slab
            .alloc(Dentry::new(root.sb.clone(), ptr::null_mut(), b"x", 0, 8))
    };
    let a = fresh();
    let objects = dc.objects();
    assert!(objects >= slab::SLAB);
    // SAFETY: fresh from the slab, never published; freed once.
    unsafe { <Dentry as reclaim::Free>::free(a) };
    let mut taken = Vec::new();
    loop {
        let p = fresh();
        assert_eq!(dc.objects(), objects, "a slab carved while a slot was free");
        taken.push(p);
        if p == a {
            break;
        }
    }
    for p in taken {
        // SAFETY: as above.
        unsafe { <Dentry as reclaim::Free>::free(p) };
    }
}

/// A dead dentry's slot is not handed out again while a reader pinned
/// before its death may still stand on it: it waits for the grace period
/// its retirement already waited for. (Fails if `kill` gives the slot
/// back at once: the next allocation gets it.)
#[cfg(not(shuttle))]
#[test]
fn slab_slot_waits_for_the_grace_period() {
    let vfs = crate::Vfs::new(crate::FastPaths::seeds());
    let dc = &vfs.caches().dcache;
    let root = vfs.root();
    let pin = reclaim::pin();
    let victim = {
        let _g = lock(&root.dir_lock);
        dc.d_alloc(root, b"victim")
    };
    let addr = victim.as_ptr();
    dc.d_drop(&victim);
    // The last reference of an unhashed dentry: it dies and is retired.
    drop(victim);
    reclaim::flush();
    let _g = lock(&root.dir_lock);
    let held: Vec<DentryRef> = (0..3 * slab::SLAB)
        .map(|i| {
            let d = dc.d_alloc(root, format!("n{i}").as_bytes());
            assert_ne!(d.as_ptr(), addr, "slot reused while a reader is pinned");
            d
        })
        .collect();
    drop(pin);
    drop(held);
}
