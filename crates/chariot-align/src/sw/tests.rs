//! Unit tests of the kernels' CPU side: profiles, the twins against Gotoh, the packed
//! 16-bit operations and the re-pass bookkeeping.

use super::*;
use std::sync::atomic::Ordering;

#[test]
fn profile_shape() {
    let m = Matrix::blosum62();
    let p = Profile::new(&m.encode(b"ARND").unwrap(), &m).unwrap();
    assert_eq!((p.strip, p.group, p.mpad), (16, 1, 16));
    assert_eq!(p.scores[4], PAD);
    assert_eq!(p.scores[1], -1, "query R against subject A");
    let p = Profile::new(&[0u8; 63], &m).unwrap();
    assert_eq!((p.strip, p.group, p.mpad), (16, 4, 64));
    let p = Profile::new(&[0u8; 128], &m).unwrap();
    assert_eq!((p.strip, p.group, p.mpad), (16, 8, 128), "the longest short query");
    let p = Profile::new(&[0u8; 129], &m).unwrap();
    assert_eq!((p.strip, p.group, p.mpad), (32, 8, 256), "the shortest query with 32-row strips");
    let p = Profile::new(&vec![0u8; 511], &m).unwrap();
    assert_eq!((p.strip, p.group, p.mpad, p.tile()), (32, 8, 512, 512));
    assert_eq!(p.grid(8192), 256);
    let p = Profile::new(&vec![0u8; 5000], &m).unwrap();
    assert_eq!((p.group, p.mpad, p.tile(), p.shared_bytes()), (8, 5120, 1024, 33792));
    assert!(Profile::new(&[], &m).is_err());
    assert!(Profile::new(&vec![0u8; MAX_QUERY + 1], &m).unwrap_err().contains("longer"));
}

#[test]
fn align_small_cases() {
    let m = Matrix::blosum62();
    let gaps = Gaps { open: 11, extend: 1 };
    let p = Profile::new(&m.encode(b"HEAGAWGHEE").unwrap(), &m).unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    assert_eq!(align(&p, &[], gaps, &mut a, &mut b), 0);
    assert_eq!(align(&p, &m.encode(b"W").unwrap(), gaps, &mut a, &mut b), 11);
    let q = Profile::new(&m.encode(b"WWWWW").unwrap(), &m).unwrap();
    assert_eq!(align(&q, &m.encode(b"WWWWW").unwrap(), gaps, &mut a, &mut b), 55);
    // WW, a gap of 3 (11 + 3) in the query, WW: 44 - 14.
    assert_eq!(align(&q, &m.encode(b"WWAAAWW").unwrap(), gaps, &mut a, &mut b), 30);
}

#[test]
fn kernel_choice_and_arch() {
    assert_eq!(KernelChoice::parse("auto"), Ok(KernelChoice::Auto));
    assert_eq!(KernelChoice::parse("dpx"), Ok(KernelChoice::Dpx));
    assert!(KernelChoice::parse("DPX").unwrap_err().contains("auto, portable or dpx"));
    assert!(has_dpx("sm_90") && has_dpx("sm_90a") && has_dpx("sm_100") && has_dpx("sm_120") && has_dpx("sim"));
    assert!(!has_dpx("sm_80") && !has_dpx("sm_89") && !has_dpx("") && !has_dpx("gfx90a"));
    assert_eq!(KernelChoice::Auto.resolve(&["sm_90", "sm_90"]), KernelKind::Dpx);
    assert_eq!(KernelChoice::Auto.resolve(&["sm_90", "sm_86"]), KernelKind::Portable);
    assert_eq!(KernelChoice::Auto.resolve::<&str>(&[]), KernelKind::Portable);
    assert_eq!(KernelChoice::Portable.resolve(&["sm_90"]), KernelKind::Portable);
    assert_eq!(KernelChoice::Dpx.resolve(&["sm_80"]), KernelKind::Dpx);
    let gaps = |open, extend| Gaps { open, extend };
    assert_eq!(KernelKind::Dpx.for_gaps(gaps(1000, 1000)), KernelKind::Dpx);
    assert_eq!(KernelKind::Dpx.for_gaps(gaps(16_000, 1000)), KernelKind::Portable);
    assert_eq!(KernelKind::Dpx.for_gaps(gaps(-1, 1)), KernelKind::Portable);
    assert_eq!(KernelKind::Portable.for_gaps(gaps(11, 1)), KernelKind::Portable);
    for k in [KernelKind::Portable, KernelKind::Dpx] {
        assert!(k.source().starts_with(&format!("#define SW_ONLY_{}\n", k.name().to_uppercase())));
        // The entry, declared for BLOCK threads (a minimum of blocks an SM may follow).
        let decl = format!("extern \"C\" __global__ void __launch_bounds__({BLOCK}");
        let entry = format!("{}(", k.entry());
        assert!(
            k.source()
                .split(&decl)
                .skip(1)
                .any(|rest| rest.split_once(')').is_some_and(|(_, after)| after.trim_start().starts_with(&entry))),
            "{}",
            k.entry()
        );
    }
    let m = Matrix::blosum62();
    let p = Profile::new(&vec![0u8; 511], &m).unwrap();
    assert_eq!((p.grid_of(KernelKind::Portable, 8192), p.grid_of(KernelKind::Dpx, 8192)), (256, 128));
    assert_eq!(p.grid_of(KernelKind::Dpx, 3), 1);
    assert_eq!(p.sat(), 32767 - 4, "A's best score in BLOSUM62");
    assert_eq!(Profile::new(&m.encode(b"WA").unwrap(), &m).unwrap().sat(), 32767 - 11);
}

/// The byte permute's selectors put signed byte k of a and of b, sign-extended, in
/// the low and high halfwords.
#[test]
fn prmt_selectors_sign_extend() {
    let (a, b) = (0x80_7F_FF_01u32, 0xC0_00_05_FEu32);
    for k in 0..4 {
        let want = packed::pack([(a >> (8 * k)) as u8 as i8 as i16, (b >> (8 * k)) as u8 as i8 as i16]);
        assert_eq!(packed::prmt(a, b, 0xC480 + 0x1111 * k), want, "k = {k}");
    }
    assert_eq!(packed::prmt(0x0302_0100, 0x0706_0504, 0x7531), 0x0705_0301);
    assert_eq!(packed::addmax(packed::pack([32767, -5]), packed::splat(1), packed::pack([0, 0])), packed::pack([0, 0]));
    assert_eq!(packed::max_relu(packed::pack([-3, 7]), packed::pack([-9, 2])), packed::pack([0, 7]));
}

fn random_codes(n: usize, letters: u8, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % letters as u64) as u8
        })
        .collect()
}

/// The packed pair computation (the kernel's sequence of DPX operations) gives each
/// subject's [`align16`], and below the threshold that is the exact 32-bit score,
/// for pairs of equal and unequal lengths, empty subjects and several gap costs.
#[test]
fn packed_pairs_equal_scalar_16_bit_and_exact_scores() {
    let m = Matrix::blosum62();
    let mut row = Vec::new();
    let (mut r16, mut rh, mut rf) = (Vec::new(), Vec::new(), Vec::new());
    for (qi, qlen) in [1usize, 5, 16, 17, 40, 130].into_iter().enumerate() {
        let p = Profile::new(&random_codes(qlen, 24, qi as u64 + 1), &m).unwrap();
        for gaps in [Gaps { open: 11, extend: 1 }, Gaps { open: 0, extend: 0 }, Gaps { open: 5, extend: 3 }] {
            for (la, lb) in [(0, 0), (1, 0), (7, 7), (50, 3), (3, 50), (120, 119), (64, 0)] {
                let a = random_codes(la, 24, (la * 31 + lb + qlen) as u64);
                let b = random_codes(lb, 24, (lb * 17 + la + 2 * qlen) as u64);
                let cols = la.max(lb);
                let got = packed::halves(align_pair16(&p, &a, &b, gaps, &mut row));
                let want = [align16(&p, &a, cols, gaps, &mut r16), align16(&p, &b, cols, gaps, &mut r16)];
                assert_eq!(got, want, "q {qlen}, {la} x {lb}, {gaps:?}");
                assert_eq!(want[0] as i32, align(&p, &a, gaps, &mut rh, &mut rf), "q {qlen}, a {la}");
                assert_eq!(want[1] as i32, align(&p, &b, gaps, &mut rh, &mut rf), "q {qlen}, b {lb}");
            }
        }
    }
}

/// With a matrix whose best score is 127, the threshold is 32640: 257 W against 257
/// W (32639) is exact in 16 bits; 258 (32766) and 300 (38100, which wraps) reach
/// it, and the packed pair marks just that subject, whatever its partner does.
#[test]
fn sixteen_bit_saturation_is_marked_at_the_threshold() {
    let m = Matrix::parse("big", "   A  W\nA  1 -1\nW -1 127\n").unwrap();
    let gaps = Gaps { open: 11, extend: 1 };
    let (mut row, mut r16, mut rh, mut rf) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (len, exact) in [(257usize, 32639), (258, 32766), (300, 38100)] {
        let w = vec![1u8; len];
        let p = Profile::new(&w, &m).unwrap();
        assert_eq!(p.sat(), 32640);
        assert_eq!(align(&p, &w, gaps, &mut rh, &mut rf), exact);
        let s16 = align16(&p, &w, len, gaps, &mut r16) as i32;
        assert_eq!(s16 >= p.sat(), exact >= p.sat(), "length {len}: 16-bit {s16}");
        if exact < p.sat() {
            assert_eq!(s16, exact);
        }
        let other = vec![0u8; len / 2];
        let pair = packed::halves(align_pair16(&p, &w, &other, gaps, &mut row));
        assert_eq!(pair[0] as i32, s16);
        assert_eq!(pair[1] as i32, align(&p, &other, gaps, &mut rh, &mut rf));
    }
}

/// The DPX kernel's CPU twin on a packed chunk of an odd number of subjects, two of
/// them past the threshold: every score exact, and exactly those two re-passed.
#[test]
fn dpx_twin_repasses_just_the_saturated_subjects() {
    use chariot::kernel::LaunchShape;
    let m = Matrix::parse("big", "   A  W\nA  1 -1\nW -1 127\n").unwrap();
    let gaps = Gaps { open: 11, extend: 1 };
    let query = vec![1u8; 300];
    let profiles = Arc::new(vec![Profile::new(&query, &m).unwrap()]);
    let p = &profiles[0];
    // Longest first, as packed chunks are.
    let subjects: Vec<Vec<u8>> = vec![vec![1; 320], vec![1; 290], random_codes(200, 2, 3), vec![1; 257], vec![0; 10]];
    let nseq = subjects.len();
    let (chunk, res_off, off) = pack_chunk(&subjects);
    let (mut rh, mut rf) = (Vec::new(), Vec::new());
    let want: Vec<i32> = subjects.iter().map(|s| align(p, s, gaps, &mut rh, &mut rf)).collect();
    let over = want.iter().filter(|&&x| x >= p.sat()).count();
    assert_eq!(over, 2, "{want:?}");
    for kind in [KernelKind::Portable, KernelKind::Dpx] {
        let (k, repassed) = kernel_counted(kind, profiles.clone(), vec![0], 300.0);
        // Buffers aligned for the twin's i32 and int2 views.
        let mut store = [vec![0u8; chunk.len() + 16], vec![0u8; p.scores.len() + 16], vec![0u8; 1040], vec![0u8; 80]];
        let mut bufs: Vec<&mut [u8]> = store.iter_mut().map(|v| aligned(v)).collect();
        bufs[0][..chunk.len()].copy_from_slice(&chunk);
        for (d, &x) in bufs[1].iter_mut().zip(&p.scores) {
            *d = x as u8;
        }
        let args = twin_args(&args(p, 0, 0, nseq, res_off, off as u64, gaps));
        let shape =
            LaunchShape { grid: p.grid_of(kind, nseq).into(), block: BLOCK.into(), shared_bytes: p.shared_bytes() };
        k.run_cpu_twin(shape, &args, &mut bufs).unwrap();
        let got: Vec<i32> = bufs[3].chunks(4).take(nseq).map(|b| i32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(got, want, "{kind:?}");
        let expect = if kind == KernelKind::Dpx { 2 } else { 0 };
        assert_eq!(repassed.load(Ordering::Relaxed), expect, "{kind:?}");
    }
}

/// A packed chunk of `subjects` (u32 offsets, then the residues from a 16-byte boundary),
/// with where its residues start and how many there are.
fn pack_chunk(subjects: &[Vec<u8>]) -> (Vec<u8>, usize, u32) {
    let nseq = subjects.len();
    let res_off = ((nseq + 1) * 4).next_multiple_of(16);
    let mut chunk = vec![0u8; res_off];
    let mut off = 0u32;
    for (k, s) in subjects.iter().enumerate() {
        chunk[k * 4..k * 4 + 4].copy_from_slice(&off.to_le_bytes());
        chunk.extend_from_slice(s);
        off += s.len() as u32;
    }
    chunk[nseq * 4..nseq * 4 + 4].copy_from_slice(&off.to_le_bytes());
    (chunk, res_off, off)
}

/// A launch's arguments for a CPU twin over buffers 0..4: chunk, profiles, scratch, scores.
fn twin_args(roles: &[Role]) -> Vec<chariot::kernel::TwinArg> {
    use chariot::kernel::TwinArg;
    roles
        .iter()
        .map(|r| match *r {
            Role::Chunk => TwinArg::Buffer(0),
            Role::Profiles => TwinArg::Buffer(1),
            Role::Scratch => TwinArg::Buffer(2),
            Role::Scores => TwinArg::Buffer(3),
            Role::U32(v) => TwinArg::U32(v),
            Role::I32(v) => TwinArg::I32(v),
            Role::U64(v) => TwinArg::U64(v),
        })
        .collect()
}

/// The part of `v` from its first 16-byte-aligned byte, less 16 bytes.
fn aligned(v: &mut [u8]) -> &mut [u8] {
    let off = v.as_ptr().align_offset(16);
    let n = v.len() - 16;
    &mut v[off..off + n]
}

/// Queries of one layout pair as two runs of about the same rows, each query on the run
/// with fewer rows so far, longest first; a query far longer than the rest runs alone,
/// and so does the only query of its layout.
#[test]
fn queries_pair_by_length() {
    let m = Matrix::blosum62();
    let profiles = |lens: &[usize]| -> Vec<Profile> {
        lens.iter().map(|&l| Profile::new(&random_codes(l, 20, l as u64), &m).unwrap()).collect()
    };
    let rows = |ps: &[Profile], run: &[usize]| run.iter().map(|&q| ps[q].mpad).sum::<usize>();
    // CUDASW++'s 20 benchmark queries: one pair of runs of 85 passes each (170 passes of
    // 256 rows, where the 20 queries own 163), none alone.
    let lens =
        [144, 189, 222, 375, 464, 567, 657, 729, 850, 1000, 1500, 2005, 2504, 3005, 3564, 4061, 4548, 4743, 5147, 5478];
    let ps = profiles(&lens);
    let (pairs, alone) = pair_queries(&ps);
    assert!(alone.is_empty(), "{alone:?}");
    assert_eq!(pairs.len(), 1);
    let named = |run: &[usize]| run.iter().map(|&q| lens[q]).collect::<Vec<_>>();
    assert_eq!(named(&pairs[0][0]), [5478, 4548, 4061, 2504, 2005, 850, 657, 464, 222, 189]);
    assert_eq!(named(&pairs[0][1]), [5147, 4743, 3564, 3005, 1500, 1000, 729, 567, 375, 144]);
    assert_eq!((rows(&ps, &pairs[0][0]), rows(&ps, &pairs[0][1])), (85 * 256, 85 * 256));
    // 40 and 37 share a layout (16-row strips, 4 lanes); 4000 is alone in its own.
    assert_eq!(pair_queries(&profiles(&[40, 4000, 37])), (vec![[vec![0], vec![2]]], vec![1]));
    assert_eq!(pair_queries(&profiles(&[63])), (vec![], vec![0]));
    // 5000 and 200 would take 5120 rows each: 1.9x theirs. Both run alone.
    assert_eq!(pair_queries(&profiles(&[200, 5000])), (vec![], vec![1, 0]));
    // 5000, 4000 and 200: 5000 alone would leave 4000 and 200 as bad; pairs 5120 rows
    // against 4096 + 256 are within the gain.
    let (pairs, alone) = pair_queries(&profiles(&[200, 5000, 4000]));
    assert_eq!((pairs, alone), (vec![[vec![1], vec![2, 0]]], vec![]));
    // At most MAX_PAIRED queries a launch: 40 of one length make two launches.
    let (pairs, alone) = pair_queries(&profiles(&[300; 40]));
    assert!(alone.is_empty());
    assert_eq!(pairs.iter().map(|[a, b]| (a.len(), b.len())).collect::<Vec<_>>(), [(16, 16), (4, 4)]);
}

/// A pair's packed profile: each tile's letter rows in strips of `strip` words (the low
/// run's score in the low halfword, the high run's in the high halfword), 16 zero bytes
/// after each strip; a run's queries end to end over their own padded rows, the shorter
/// run's rows past its end and the letters past the matrix's padding. Its pass words
/// say where each query ends and starts; [`plan_runs`] reads them back and refuses any
/// that disagree with the table.
#[test]
fn pair_profile_layout_and_plan() {
    let m = Matrix::blosum62();
    let qs = [random_codes(600, 20, 1), random_codes(500, 20, 2), random_codes(150, 20, 3)];
    let ps: Vec<Profile> = qs.iter().map(|q| Profile::new(q, &m).unwrap()).collect();
    // Low run: 600 (768 rows); high run: 500 (512), then 150 (256).
    let pair = PairProfile::new(&ps, [vec![0], vec![1, 2]]);
    assert_eq!((pair.mpad, pair.strip, pair.group, pair.qt), (768, 32, 8, 256));
    assert_eq!(pair.query_residues, 1250);
    // 3 tiles of 32 letters of 8 strips of (32 words + 16 bytes).
    assert_eq!(pair.packed.len(), 3 * 32 * 8 * 144);
    assert_eq!(pair.shared, 33 * 8 * 144);
    assert_eq!(pair.grid(8192), 256);
    let word = |tile: usize, letter: usize, row: usize| {
        let at = (tile * 32 + letter) * 8 * 144 + row / 32 * 144 + row % 32 * 4;
        let w = u32::from_le_bytes(pair.packed[at..at + 4].try_into().unwrap());
        (w as u16 as i16, (w >> 16) as u16 as i16)
    };
    let score = |q: &[u8], i: usize, letter: usize| {
        if i < q.len() && letter < m.letters.len() {
            m.scores[q[i] as usize][letter] as i16
        } else {
            PAD as i16
        }
    };
    for letter in [0usize, 5, 19, 25, 31] {
        for i in [0usize, 31, 32, 149, 150, 255, 256, 499, 500, 511, 512, 599, 600, 661, 662, 767] {
            let high = if i < 512 { score(&qs[1], i, letter) } else { score(&qs[2], i - 512, letter) };
            assert_eq!(word(i / 256, letter, i % 256), (score(&qs[0], i, letter), high), "letter {letter} row {i}");
        }
    }
    for tile in 0..3 {
        for strip in 0..8 {
            let at = (tile * 32 + 7) * 8 * 144 + strip * 144 + 128;
            assert_eq!(pair.packed[at..at + 16], [0; 16]);
        }
    }
    // Pass 1 ends the high run's first query (segment 2); pass 2 starts its second
    // (segment 3) and ends it, and ends the low run's (segment 1).
    assert_eq!(pair.passes, [0, 2 << 6, 1 | 3 << 6 | HIGH_STARTS]);
    let table = pair.table(&ps, &[0, 10_000, 20_000]);
    assert_eq!(table, [[0, 0, 768, ps[0].sat()], [1, 10_000, 512, ps[1].sat()], [2, 20_000, 256, ps[2].sat()]]);
    assert_eq!(plan_runs(&pair.passes, &table, 256), Ok([vec![0], vec![1, 2]]));
    for (bad, why) in [
        (vec![0, 2 << 6, 1 | 3 << 6], "start bit"),
        (vec![HIGH_STARTS, 2 << 6, 1 | 3 << 6 | HIGH_STARTS], "start bit"),
        (vec![0, 2 << 6, 1 | 2 << 6 | HIGH_STARTS], "ends twice"),
        (vec![0, 3 << 6, 1 | 2 << 6 | HIGH_STARTS], "rows"),
        (vec![0, 2 << 6, 1 | 4 << 6 | HIGH_STARTS], "not in the table"),
        (vec![0, 2 << 6, 3 << 6 | HIGH_STARTS], "segment 0 ends on no pass"),
    ] {
        let e = plan_runs(&bad, &table, 256).unwrap_err();
        assert!(e.contains(why), "{bad:?}: {e}");
    }
    // A short pair: 16-row strips, a tile of the whole run.
    let short = |len, seed| Profile::new(&random_codes(len, 20, seed), &m).unwrap();
    let pair = PairProfile::new(&[short(37, 3), short(40, 4)], [vec![1], vec![0]]);
    assert_eq!((pair.mpad, pair.strip, pair.qt, pair.packed.len()), (64, 16, 64, 32 * 4 * 80));
    assert_eq!(pair.shared, 33 * 4 * 80);
    assert_eq!(pair.passes, [1 | 2 << 6]);
}

/// The query-pair kernel's CPU twin: every query's score exact over a packed chunk, the
/// second query of a run included; the saturated (query, subject) pairs, and only those,
/// aligned again in 32 bits; a plan that disagrees with the profiles refused.
#[test]
fn pair_twin_scores_every_query_and_repasses_the_saturated() {
    use chariot::kernel::LaunchShape;
    let m = Matrix::parse("big", "   A  W\nA  1 -1\nW -1 127\n").unwrap();
    let gaps = Gaps { open: 11, extend: 1 };
    let qs = [random_codes(100, 2, 5), vec![1u8; 300], random_codes(280, 2, 9), random_codes(150, 2, 7)];
    let ps: Vec<Profile> = qs.iter().map(|q| Profile::new(q, &m).unwrap()).collect();
    // Query 0 (another layout) is not in the pair: its scores stay untouched.
    let pair = PairProfile::new(&ps, [vec![1], vec![2, 3]]);
    let subjects: Vec<Vec<u8>> = vec![vec![1; 320], vec![1; 290], random_codes(200, 2, 3), vec![1; 257], vec![]];
    let nseq = subjects.len();
    let (chunk, res_off, off) = pack_chunk(&subjects);
    let (mut rh, mut rf) = (Vec::new(), Vec::new());
    let want: Vec<Vec<i32>> =
        ps.iter().map(|p| subjects.iter().map(|s| align(p, s, gaps, &mut rh, &mut rf)).collect()).collect();
    let over = (1..4).map(|q| want[q].iter().filter(|&&x| x >= ps[q].sat()).count()).sum::<usize>();
    assert_eq!(over, 2, "{want:?}");
    // The profiles buffer as Profiles::pair_up lays it out.
    let mut bytes: Vec<u8> = Vec::new();
    let mut offsets = Vec::new();
    for p in &ps {
        offsets.push(bytes.len());
        bytes.extend(p.scores.iter().map(|&x| x as u8));
    }
    let packed = bytes.len();
    bytes.extend_from_slice(&pair.packed);
    let table = bytes.len();
    bytes.extend(pair.table(&ps, &offsets).iter().flatten().flat_map(|x| x.to_le_bytes()));
    let passes = bytes.len();
    bytes.extend(pair.passes.iter().flat_map(|x| x.to_le_bytes()));
    let (k, repassed) = pair_kernel(Arc::new(ps.clone()), offsets.clone(), 300.0);
    let mut store = [vec![0u8; chunk.len() + 16], vec![0u8; bytes.len() + 16], vec![0u8; 2600], vec![0u8; 96]];
    let mut bufs: Vec<&mut [u8]> = store.iter_mut().map(|v| aligned(v)).collect();
    bufs[0][..chunk.len()].copy_from_slice(&chunk);
    bufs[1][..bytes.len()].copy_from_slice(&bytes);
    let at = PairAt { packed, passes, table };
    let args = twin_args(&pair_args(&pair, at, nseq, res_off, off as u64, gaps));
    let shape = LaunchShape { grid: pair.grid(nseq).into(), block: BLOCK.into(), shared_bytes: pair.shared };
    k.run_cpu_twin(shape, &args, &mut bufs).unwrap();
    let got: Vec<i32> = bufs[3].chunks(4).take(4 * nseq).map(|b| i32::from_le_bytes(b.try_into().unwrap())).collect();
    for q in 1..4 {
        assert_eq!(got[q * nseq..(q + 1) * nseq], want[q], "query {q}");
    }
    assert!(got[..nseq].iter().all(|&x| x == 0), "query 0's scores untouched");
    assert_eq!(repassed.load(Ordering::Relaxed), 2);
    // A table row naming another query's profile, or pass words that end a query
    // early, are errors, not a guess.
    let mut moved = args.clone();
    moved[6] = chariot::kernel::TwinArg::U32(table as u32 + 4);
    assert!(k.run_cpu_twin(shape, &moved, &mut bufs).is_err());
    bufs[1][passes..passes + 4].copy_from_slice(&(1u32 << 6).to_le_bytes());
    assert!(k.run_cpu_twin(shape, &args, &mut bufs).unwrap_err().to_string().contains("pass 0"));
}
