//! Robot-specialised collision kernels: CUDA C generated from a loaded [`CollisionModel`], with
//! the robot's constants (joint origins and axes, body and covering-sphere centres and radii,
//! the self-collision pairs, the margin, the sweep reach table) folded into straight-line code,
//! compiled by NVRTC when a [`super::CudaChecker`] is built.
//!
//! # Same arithmetic as the CPU
//!
//! The generated code is not a new algorithm: it is the table-driven twin (`kernels/common.cuh`,
//! itself the twin of `src/collision/cpu.rs`) with the loops over robot tables unrolled. Every
//! floating-point expression is either a call of the same `common.cuh` function the generic kernel
//! calls (`gmp_joint_frame`, `xf_mul`, `xf_apply`, `gmp_near_box`, `gmp_separated`, ...) or the
//! same expression written in the same order, with each robot constant written as a hexadecimal
//! float literal of exactly the f32 the tables hold (see [`f32_literal`]). Nothing is folded here:
//! where two constants meet (say `radius + 0.0 + margin`), the compiler folds them, and IEEE
//! constant folding in round-to-nearest gives the bits the CPU computes at run time. The module
//! is compiled with the same options as the generic one (`--fmad=false`, IEEE division and square
//! root, no flush to zero).
//!
//! What the unrolling may change, and why the verdicts cannot:
//! - The order of the tests. A configuration is free when every (body, obstacle) test and every
//!   self-pair test says so; each test is a pure function of the configuration (the GJK caches
//!   start afresh per test), so their conjunction does not depend on the order the CPU stops at.
//!   The generated code tests the bodies frame by frame, as forward kinematics reaches them, and
//!   each pair once both of its frames are known, and returns after the frame (or chunk of a
//!   frame's bodies) where it met the first collision.
//! - A pair of sphere bodies whose one covering sphere *is* the body's bounding sphere (same
//!   centre and radius bits, the sphere model) is tested once: the CPU's second test computes the
//!   same expression on the same values.
//! - Pairs where a body has no covering sphere are never in collision on the CPU (its covering
//!   loop finds nothing near) and are left out.
//! - The [`Layout::Grouped`] layout stores the frames and recomputes a world centre in every
//!   function that needs it: the same expression on the same stored values, so the same bits.
//! - The [`Layout::Looped`] layout computes every world centre once (the same expression),
//!   stores it, and runs the tests as loops over tables of the robot's constants (see
//!   `emit_looped`); for sphere models a configuration that needs an out-of-line test goes
//!   whole to the table-driven twin, the generic kernel's code.
//!
//! The broad phase (forward kinematics, every bounding-sphere test) is what the generated code
//! holds. When a bounding test fires, the rest of that test (covering spheres, then GJK) runs
//! out of line in the table-driven code the generic kernel uses (`gmp_body_obstacle_clear_at`,
//! `gmp_pair_clear_at` in `common.cuh`). On the MBM Panda about 60% of uniformly random
//! configurations have a test that reaches GJK in the polytope model (mostly self pairs; measured
//! on the CPU), none in the sphere model against the MBM scenes (boxes and cylinders: only mesh
//! obstacles need GJK for sphere bodies).
//!
//! Scene obstacles and the base state stay in device memory (the generic kernel's argument
//! block), so scene updates and new base states need no new module.

use crate::collision::detmath::V3;
use crate::collision::model::{bound_of, BodyModel, CollisionModel};

/// [`Layout::for_model`] picks the grouped or looped layout above this many moving bodies.
pub const GROUPED_ABOVE_BODIES: usize = 32;
/// Most bodies per function of the [`Layout::Grouped`] layout.
pub const CHUNK_BODIES: usize = 8;
/// Most bodies a specialised kernel is generated for.
pub const MAX_BODIES: usize = 4096;
/// Most self-collision pairs a specialised kernel is generated for.
pub const MAX_SELF_PAIRS: usize = 20_000;

/// Why no specialised kernel was generated (the generic kernel runs instead).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecialiseError {
    /// A robot constant is NaN or infinite (it could not be written as a literal).
    #[error("the collision model holds a non-finite constant ({what})")]
    NonFinite {
        /// Which constant.
        what: String,
    },
    /// The model is too large for straight-line code.
    #[error("the collision model is too large to specialise: {what} (limit {limit})")]
    TooLarge {
        /// What was counted.
        what: String,
        /// The limit.
        limit: usize,
    },
    /// The model's tables are inconsistent (an index out of range).
    #[error("the collision model is inconsistent: {0}")]
    Inconsistent(String),
}

/// What a generated kernel contains.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SpecialiseStats {
    /// Planning-group joints.
    pub dof: usize,
    /// Moving frames (forward-kinematics steps).
    pub frames: usize,
    /// Bodies tested against the obstacles.
    pub bodies: usize,
    /// Self-collision pairs tested.
    pub self_pairs: usize,
    /// Self pairs reduced to one sphere-sphere test (sphere bodies).
    pub sphere_pairs: usize,
    /// Self pairs whose bounding test is followed, when it fires, by the out-of-line covering
    /// and exact tests.
    pub fine_pairs: usize,
    /// Self pairs left out: a body without covering spheres is never in contact on the CPU.
    pub skipped_pairs: usize,
    /// Culling bounds tested before a group's bodies against an obstacle (per obstacle kind).
    pub cull_bounds: usize,
    /// Bound tests put before the sphere pairs between two frames.
    pub cull_pair_bounds: usize,
    /// Bytes of generated CUDA C (without the shared `common.cuh` and `collision.cu`).
    pub generated_bytes: usize,
    /// The [`Layout`] generated.
    pub layout: String,
    /// [`Layout::Looped`]: world centres (bodies, culling bounds) each thread stores.
    pub slots: usize,
    /// [`Layout::Looped`]: bytes of the test tables (constant memory when they fit).
    pub table_bytes: usize,
    /// [`Layout::Looped`] and its compact and f16 builds: the culling bounds looked up in the
    /// scene's proximity grid before the obstacle loop of the configuration kernels (0: no
    /// lookup; see [`SpecialisedSource::prox_reach`]).
    pub prox_covers: usize,
}

/// A generated translation unit.
#[derive(Clone, Debug)]
pub struct SpecialisedSource {
    /// The whole translation unit for NVRTC: `common.cuh`, the generated tests, `collision.cu`.
    pub source: String,
    /// The generated part alone.
    pub generated: String,
    /// What it contains.
    pub stats: SpecialiseStats,
    /// The reach (metres) the scene's proximity grid ([`crate::collision::prox::ProxGrid`])
    /// must be built for, when the configuration kernels look obstacles up in it: the largest
    /// reach of a top-level culling bound's test, with the f16 pass's largest rounding bound
    /// ([`PROX_EH_MAX`]) and the margin. `None`: the kernels read no grid.
    pub prox_reach: Option<f64>,
}

/// The f16 pass reads the proximity grid only while its rounding bound (`gmp_lp_eh`) is at
/// most this (metres; centres within about 9.6 m of the origin): the grid's reach includes it.
pub const PROX_EH_MAX: f32 = 0.01;

/// `x` as a C++17 hexadecimal float literal of exactly the same f32 (`0x1.8p-3f`), with a sign
/// and in parentheses when negative; `None` for NaN and infinities. Hexadecimal literals are
/// exact: no decimal rounding can differ between the Rust tables and NVRTC's parser.
pub fn f32_literal(x: f32) -> Option<String> {
    if !x.is_finite() {
        return None;
    }
    let bits = x.to_bits();
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    let body = if exp == 0 && man == 0 {
        "0x0p+0".to_string()
    } else if exp == 0 {
        format!("0x0.{:06x}p-126", man << 1)
    } else {
        format!("0x1.{:06x}p{:+}", man << 1, exp - 127)
    };
    Some(if bits >> 31 != 0 {
        format!("(-{body}f)")
    } else {
        format!("{body}f")
    })
}

/// Writes literals, failing on non-finite constants.
struct Lit;

impl Lit {
    fn f(x: f32, what: impl FnOnce() -> String) -> Result<String, SpecialiseError> {
        f32_literal(x).ok_or_else(|| SpecialiseError::NonFinite { what: what() })
    }

    fn v3(v: &V3, what: impl Fn() -> String) -> Result<String, SpecialiseError> {
        Ok(format!(
            "v3({}, {}, {})",
            Self::f(v[0], &what)?,
            Self::f(v[1], &what)?,
            Self::f(v[2], &what)?
        ))
    }
}

/// Indented line output.
struct Out {
    s: String,
    indent: usize,
}

impl Out {
    fn line(&mut self, l: impl AsRef<str>) {
        for _ in 0..self.indent {
            self.s.push_str("    ");
        }
        self.s.push_str(l.as_ref());
        self.s.push('\n');
    }

    fn open(&mut self, l: impl AsRef<str>) {
        self.line(l);
        self.indent += 1;
    }

    fn close(&mut self, l: impl AsRef<str>) {
        self.indent = self.indent.saturating_sub(1);
        self.line(l);
    }

    /// `} else {`-style lines: closes a block and opens the next.
    fn mid(&mut self, l: impl AsRef<str>) {
        self.close(l);
        self.indent += 1;
    }
}

/// The C name of the transform of frame `f` (`-1`: the root, identity).
fn frame_name(f: i32) -> String {
    if f < 0 {
        "FR".into()
    } else {
        format!("F{f}")
    }
}

/// A body's covering spheres, checked against the sphere table.
fn covering<'a>(m: &'a CollisionModel, b: &BodyModel) -> Result<&'a [[f32; 4]], SpecialiseError> {
    let (s, n) = (b.sphere_start as usize, b.sphere_count as usize);
    m.spheres.get(s..s + n).ok_or_else(|| {
        SpecialiseError::Inconsistent(format!(
            "body on link {} names spheres {s}..{} of {}",
            b.link,
            s + n,
            m.spheres.len()
        ))
    })
}

/// True when the body is one sphere whose single covering sphere is its bounding sphere, bit for
/// bit: then the CPU's covering test of a pair of such bodies repeats the bounding test.
fn is_plain_sphere(m: &CollisionModel, b: &BodyModel) -> bool {
    let Ok(cov) = covering(m, b) else {
        return false;
    };
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    b.vert_count == 1
        && cov.len() == 1
        && bits(&cov[0][..3]) == bits(&b.center)
        && cov[0][3].to_bits() == b.radius.to_bits()
}

/// Whether the CPU runs the covering-sphere test of a body against obstacles
/// (`b.inflate == 0.0 && b.sphere_count > 0` in `frames_valid`).
fn env_covering(b: &BodyModel) -> bool {
    b.inflate == 0.0 && b.sphere_count > 0
}

/// A value in folded code: a constant known when the code is generated, or a C expression.
#[derive(Clone, Debug, PartialEq)]
enum Sym {
    C(f32),
    V(String),
}

impl Sym {
    /// A constant zero (either sign).
    fn zero(&self) -> bool {
        matches!(self, Sym::C(x) if *x == 0.0)
    }

    /// The C text of the value.
    fn lit(&self) -> Result<String, SpecialiseError> {
        match self {
            Sym::C(x) => Lit::f(*x, || "folded constant".into()),
            Sym::V(e) => Ok(e.clone()),
        }
    }
}

/// A folded transform: rotation entries (row-major), then the translation.
type SymXf = [Sym; 12];

/// The identity transform as constants.
fn sym_identity() -> SymXf {
    std::array::from_fn(|i| Sym::C(if i == 0 || i == 4 || i == 8 { 1.0 } else { 0.0 }))
}

/// How the generated tests are laid out in device functions, and whether the forward kinematics
/// and the world centres are folded (see [`Layout::folds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Layout {
    /// One straight-line function: forward kinematics, then each frame's bodies against the
    /// obstacles and in their self pairs as the frame is reached. Fewest instructions; every world
    /// centre stays live until its last pair, so models with many spheres need many registers.
    Inline,
    /// Forward kinematics in one function that stores the frames; the bodies of each frame, in
    /// chunks of at most [`CHUNK_BODIES`], tested (against the obstacles, and in the pairs whose
    /// later body they are) in a function of their own, which recomputes (identically) the world
    /// centres it needs from the stored frames. More instructions and local-memory loads, fewer
    /// registers (more threads per SM).
    Grouped,
    /// [`Layout::Inline`] with folded constants (see [`Layout::folds`]).
    InlineFold,
    /// [`Layout::Grouped`] with folded constants (see [`Layout::folds`]).
    GroupedFold,
    /// Forward kinematics and the world centres unrolled as in [`Layout::Inline`], each centre
    /// stored in a per-thread array; the obstacle tests and the self-pair tests then run as
    /// short loops over compact tables of the robot's bodies, culling bounds and pairs (see
    /// `emit_looped`). Far less code than the unrolled layouts (which miss the instruction
    /// cache on sphere models), few registers, and every world centre computed once.
    Looped,
    /// [`Layout::Looped`] with fewer loop iterations that wait on each other (each loads a world
    /// centre from the per-thread slot array, local memory, before its test and branch):
    /// - per obstacle, the bounds of every frame (and the first tests under a node without one,
    ///   such as the root's fixed body) are tested side by side into a mask, and the loop visits
    ///   only the nodes that fired;
    /// - the bounds of the top-level blocks of self pairs likewise (the first 64);
    /// - a block of self pairs between two frames with more than [`LOOPED_SPLIT_GROUPS`] groups
    ///   becomes a gate (the two frames' bounds) over sub-blocks, one per pair of neighbour runs
    ///   (a run of the earlier frame's bodies against a run of the later one's, each under its
    ///   padded bound; at most 64): a gate that does not fire skips them, one that fires tests
    ///   their bounds side by side.
    ///
    /// On the MBM Panda sphere model (host count, 20,000 uniform configurations per scene) the
    /// iterations per configuration drop from 156 to 21: the hand's and the forearm's bounds
    /// (84 groups) overlap in almost every configuration, their runs mostly do not. The same
    /// culling tests (padded bounds, the same expressions), so the same verdicts.
    LoopedGated,
    /// [`Layout::Looped`] with the tests interleaved with forward kinematics: right after each
    /// frame's world centres are stored, that frame's bodies are tested against every obstacle
    /// and the self pairs whose later body is on that frame are tested, while the slots just
    /// written are still in the L1 cache (the Nsight Compute profile of `looped` shows the
    /// kernel waiting on local-memory loads of the slot array: 1.3 KB per thread, far beyond
    /// L1, with about half the loads missing). A collision found early also skips the forward
    /// kinematics of the later frames. The same tables and tests as `looped`, in another order.
    Streamed,
    /// [`Layout::Looped`] with 12-byte slots in the configuration kernel: a world centre
    /// without the sweep, which is zero for configurations (the motion kernels keep 16-byte
    /// slots). The Nsight Compute profile of `looped` shows the slot array (81 x 16 bytes per
    /// thread for the Panda sphere model) making a round trip through DRAM for every
    /// configuration (about 2.7 KB of DRAM traffic per configuration); this cuts it by a
    /// quarter. Same tables, tests and order as `looped`.
    LoopedCompact,
    /// [`Layout::LoopedCompact`] with folded constants (see [`Layout::folds`]): the forward
    /// kinematics, the world centres and the culling-bound centres written without the products
    /// with constant zeros and ones (the unfolded looped code computes every entry of
    /// `origin * joint` and `parent * joint`: NVRTC may not drop `x * 0.0f`, which is `-0` or
    /// NaN for some `x`), and boxes and cylinders rotated about z tested without the products
    /// with their rotation's zeros. Same tables, tests and order as `looped-compact`.
    LoopedCompactFold,
    /// [`Layout::LoopedCompactFold`] with a faster configuration kernel for large batches: a
    /// pass with 6-byte slots, each world centre rounded to f16 (half the slot array's memory
    /// traffic, which the kernel is bound by), decides what it can; the rest go to the exact
    /// `looped-compact-fold` code. Each test of the pass is the exact test at the rounded centres
    /// with its reach grown, and where that fires shrunk, by a bound on the rounding (see
    /// `emit_half_slot`): not firing grown means free, firing shrunk means in collision, as the
    /// exact tests say; in between (within about a millimetre of a contact: 0.3 % of uniformly
    /// random Panda configurations, 2.3 % UR5, 1.5 % Fetch in the host twin) the exact code
    /// decides. `check_configs_half` queues those configurations and `check_configs_rest` checks
    /// them, packed into whole warps. Batches below [`super::HALF_MIN_ENV`] (default one wave
    /// of the device), motions and the several-scene kernels run the exact code only. Models that
    /// need out-of-line tests (polytopes, covering spheres, meshes), or have a negative margin,
    /// get `looped-compact-fold` itself.
    ///
    /// The default for sphere models. On the H100 (MBM Panda, all seven scenes, 2026-11-23,
    /// results/collision/half_slots_H100_2026-11-23/tri_state/) the configuration kernel ran
    /// +1 to +10 % faster than `looped-compact-fold` on batches of 4e6 and 1e7 on six scenes,
    /// -2 % on bookshelf_thin (1.0e9/s on bookshelf_small); batches of 1e6 run the exact kernel.
    /// Its build takes about 4 s longer (both passes; 20 s against 15-18 s with the driver's
    /// compile on the H100).
    LoopedHalf,
}

impl Layout {
    /// Every layout, in the order of their names.
    pub const ALL: [Layout; 10] = [
        Layout::Inline,
        Layout::Grouped,
        Layout::InlineFold,
        Layout::GroupedFold,
        Layout::Looped,
        Layout::LoopedGated,
        Layout::Streamed,
        Layout::LoopedCompact,
        Layout::LoopedCompactFold,
        Layout::LoopedHalf,
    ];

    /// The layout [`generate`] picks for models with more than [`GROUPED_ABOVE_BODIES`] moving
    /// bodies: [`Layout::LoopedHalf`] when every body is one sphere (sphere models, such as
    /// the MBM robots' spherized ones), [`Layout::Grouped`] otherwise (the inline code needs every
    /// register and spills, by `ptxas -v` for the MBM robots); [`Layout::Inline`] for smaller
    /// models (polytope models: ~110-140 registers inline, and the grouped code is about twice
    /// as long). Looped for sphere models from `gmp bench collision --spec-builds looped` on the
    /// H100 (results/collision/README.md, 2026-11-21, Panda): configuration kernel 7.0-7.8e8/s
    /// against grouped's 6.3-6.4e8/s at 1e7 configurations, motions 1.2-1.4x, 4x shorter
    /// compile (3.9 s against 16.7 s, NVRTC and driver); its compact-slot build measured 10-13 %
    /// faster again in the configuration kernel (8.8e8/s against 7.8e8/s, bookshelf_small, 1e7,
    /// session 7), and folding it 1-4 % faster than that (side by side in one process, Panda,
    /// bookshelf_small and cage, 1e6 and 1e7; balanced motions 1-8 %; H100, 2026-11-22,
    /// results/collision/fold_compact_H100_2026-11-22/). [`Layout::LoopedHalf`] (that code with an
    /// f16-slot pass for large batches) measured 1-10 % faster again on six of the seven Panda
    /// scenes at 4e6 and 1e7 configurations (results/collision/half_slots_H100_2026-11-23/) and
    /// is what sphere models get.
    pub fn for_model(m: &CollisionModel) -> Layout {
        let moving = m.bodies.iter().filter(|b| b.frame >= 0).count();
        if moving <= GROUPED_ABOVE_BODIES {
            Layout::Inline
        } else if m.bodies.iter().all(|b| is_plain_sphere(m, b)) {
            Layout::LoopedHalf
        } else {
            Layout::Grouped
        }
    }

    /// The layout's name.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Inline => "inline",
            Layout::Grouped => "grouped",
            Layout::InlineFold => "inline-fold",
            Layout::GroupedFold => "grouped-fold",
            Layout::Looped => "looped",
            Layout::LoopedGated => "looped-gated",
            Layout::Streamed => "streamed",
            Layout::LoopedCompact => "looped-compact",
            Layout::LoopedCompactFold => "looped-compact-fold",
            Layout::LoopedHalf => "looped-half",
        }
    }

    /// Parses [`Layout::name`].
    pub fn parse(s: &str) -> Option<Layout> {
        Layout::ALL.into_iter().find(|l| l.name() == s.trim())
    }

    /// The function layout without folding ([`Layout::Inline`], [`Layout::Grouped`] or
    /// [`Layout::Looped`], which [`Layout::LoopedGated`] and [`Layout::Streamed`] are too).
    pub fn base(self) -> Layout {
        match self {
            Layout::Inline | Layout::InlineFold => Layout::Inline,
            Layout::Grouped | Layout::GroupedFold => Layout::Grouped,
            Layout::Looped
            | Layout::LoopedGated
            | Layout::Streamed
            | Layout::LoopedCompact
            | Layout::LoopedCompactFold
            | Layout::LoopedHalf => Layout::Looped,
        }
    }

    /// Whether the generated code folds constants: forward kinematics, world centres and
    /// culling-bound centres are written as expressions in which every product with a constant
    /// zero (and the sum with its result) is left out and products with `1` and `-1` become the
    /// other factor, constants combined at generation time (f32, same order); and boxes and
    /// cylinders whose rotation is about z (`r[2] = r[5] = r[6] = r[7] = 0`, tested per
    /// obstacle, the same for every thread) are tested without the products with those zeros
    /// (`gmp_near_box_z`, `gmp_near_cylinder_z`).
    ///
    /// # Why the verdicts stay the CPU's
    /// For a finite `x`, `x * 0` is a zero and `y + 0 = y` exactly; `1 * x = x` and `-1 * x = -x`
    /// exactly. So every folded value equals the CPU's value as a real number; only the sign of
    /// a zero result may differ. The operations after forward kinematics (`+ - *`, `sqrtf`,
    /// `fabsf`, `fmaxf`, `floorf`, comparisons, and the divisions of GJK, whose denominators are
    /// positive or give 0/0 where they are zero) give real-equal results for real-equal inputs,
    /// so every comparison, and every verdict, is the same. Finiteness: the generated function
    /// first checks every joint value (`mult * q + offset`) against `|qv| <= 1e4`, which bounds
    /// every frame entry and world centre; when one fails (or is NaN) the configuration goes to
    /// the table-driven twin (`gmp_fk` + `gmp_frames_valid`) unfolded. The z-rotation fast path
    /// also asks for a finite obstacle translation.
    pub fn folds(self) -> bool {
        matches!(
            self,
            Layout::InlineFold
                | Layout::GroupedFold
                | Layout::LoopedCompactFold
                | Layout::LoopedHalf
        )
    }

    /// Whether the configuration kernel keeps 12-byte slots ([`Layout::LoopedCompact`] and its
    /// folded build).
    pub fn compact(self) -> bool {
        matches!(
            self,
            Layout::LoopedCompact | Layout::LoopedCompactFold | Layout::LoopedHalf
        )
    }

    /// Whether the configuration kernel runs the f16-slot pass first ([`Layout::LoopedHalf`],
    /// sphere models only).
    pub fn half(self) -> bool {
        self == Layout::LoopedHalf
    }
}

/// What is declared in the device function being written.
#[derive(Default)]
struct Scope {
    frames: Vec<bool>,
    bodies: Vec<bool>,
    root: bool,
    /// Frames are read from the stored array `fr` (grouped layout) rather than computed here.
    stored_frames: bool,
}

/// The model and what every emitter needs from it.
struct Gen<'a> {
    m: &'a CollisionModel,
    /// The margin as a literal.
    mg: String,
    /// Planning-group indices the sweep steps are taken from.
    step_groups: Vec<i32>,
    /// Constants folded ([`Layout::folds`]).
    fold: bool,
    /// The folded world transform of every moving frame, as the code after forward kinematics
    /// sees it (constants, or entries of `F<k>`); empty unless folding.
    frame_syms: Vec<SymXf>,
    /// Next folded temporary (`_f<n>`), unique in the translation unit.
    next_tmp: std::cell::Cell<usize>,
}

impl Gen<'_> {
    /// The planning-group index of full-state variable `var`, or -1.
    fn var_group(&self, var: u32) -> i32 {
        self.m.var_group.get(var as usize).copied().unwrap_or(-1)
    }

    /// A folded temporary holding `expr`.
    fn tmp(&self, o: &mut Out, expr: String) -> Sym {
        let n = self.next_tmp.get();
        self.next_tmp.set(n + 1);
        o.line(format!("const float _f{n} = {expr};"));
        Sym::V(format!("_f{n}"))
    }

    /// `a * b`, folded (see [`Layout::folds`]).
    fn mul(&self, o: &mut Out, a: &Sym, b: &Sym) -> Result<Sym, SpecialiseError> {
        if let (Sym::C(x), Sym::C(y)) = (a, b) {
            return Ok(Sym::C(x * y));
        }
        if a.zero() || b.zero() {
            return Ok(Sym::C(0.0));
        }
        for (k, v) in [(a, b), (b, a)] {
            if let Sym::C(x) = k {
                if *x == 1.0 {
                    return Ok(v.clone());
                }
                if *x == -1.0 {
                    return self.neg(o, v);
                }
            }
        }
        Ok(self.tmp(o, format!("{} * {}", a.lit()?, b.lit()?)))
    }

    /// `a + b`, folded.
    fn add(&self, o: &mut Out, a: &Sym, b: &Sym) -> Result<Sym, SpecialiseError> {
        Ok(match (a, b) {
            (Sym::C(x), Sym::C(y)) => Sym::C(x + y),
            _ if a.zero() => b.clone(),
            _ if b.zero() => a.clone(),
            _ => self.tmp(o, format!("{} + {}", a.lit()?, b.lit()?)),
        })
    }

    /// `a - b`, folded.
    fn sub(&self, o: &mut Out, a: &Sym, b: &Sym) -> Result<Sym, SpecialiseError> {
        Ok(match (a, b) {
            (Sym::C(x), Sym::C(y)) => Sym::C(x - y),
            _ if b.zero() => a.clone(),
            _ if a.zero() => self.neg(o, b)?,
            _ => self.tmp(o, format!("{} - {}", a.lit()?, b.lit()?)),
        })
    }

    /// `-a` (exact).
    fn neg(&self, o: &mut Out, a: &Sym) -> Result<Sym, SpecialiseError> {
        Ok(match a {
            Sym::C(x) => Sym::C(-x),
            Sym::V(e) => self.tmp(o, format!("-{e}")),
        })
    }

    /// `Xf::apply` folded: `((r0 p0 + r1 p1) + r2 p2) + t0` per row, the order of `xf_apply`.
    fn apply_sym(&self, o: &mut Out, a: &SymXf, p: &[Sym; 3]) -> Result<[Sym; 3], SpecialiseError> {
        let mut out = [Sym::C(0.0), Sym::C(0.0), Sym::C(0.0)];
        for (i, slot) in out.iter_mut().enumerate() {
            let x0 = self.mul(o, &a[3 * i], &p[0])?;
            let x1 = self.mul(o, &a[3 * i + 1], &p[1])?;
            let s01 = self.add(o, &x0, &x1)?;
            let x2 = self.mul(o, &a[3 * i + 2], &p[2])?;
            let s = self.add(o, &s01, &x2)?;
            *slot = self.add(o, &s, &a[9 + i])?;
        }
        Ok(out)
    }

    /// `Xf::mul` folded (the order of `xf_mul`).
    fn mul_sym(&self, o: &mut Out, a: &SymXf, b: &SymXf) -> Result<SymXf, SpecialiseError> {
        let mut out: SymXf = std::array::from_fn(|_| Sym::C(0.0));
        for i in 0..3 {
            for j in 0..3 {
                let x0 = self.mul(o, &a[i * 3], &b[j])?;
                let x1 = self.mul(o, &a[i * 3 + 1], &b[3 + j])?;
                let s01 = self.add(o, &x0, &x1)?;
                let x2 = self.mul(o, &a[i * 3 + 2], &b[6 + j])?;
                out[i * 3 + j] = self.add(o, &s01, &x2)?;
            }
        }
        let t = self.apply_sym(o, a, &[b[9].clone(), b[10].clone(), b[11].clone()])?;
        out[9..12].clone_from_slice(&t);
        Ok(out)
    }

    /// The world point of `p` (a constant in frame `frame`) as a `V3` expression: a call of
    /// `xf_apply`, or, folding, `v3(...)` of folded entries (temporaries written to `o`).
    fn world_point(
        &self,
        o: &mut Out,
        frame: i32,
        p: &V3,
        what: &dyn Fn() -> String,
    ) -> Result<String, SpecialiseError> {
        if !self.fold {
            return Ok(format!(
                "xf_apply({}, {})",
                frame_name(frame),
                Lit::v3(p, what)?
            ));
        }
        let ident = sym_identity();
        let f = if frame < 0 {
            &ident
        } else {
            self.frame_syms.get(frame as usize).ok_or_else(|| {
                SpecialiseError::Inconsistent(format!("frame {frame} has no folded transform"))
            })?
        };
        let w = self.apply_sym(o, f, &[Sym::C(p[0]), Sym::C(p[1]), Sym::C(p[2])])?;
        Ok(format!(
            "v3({}, {}, {})",
            w[0].lit()?,
            w[1].lit()?,
            w[2].lit()?
        ))
    }

    /// The joint value source of frame `k` (`q[g]` or the base state).
    fn joint_source(&self, k: usize) -> String {
        let f = &self.m.frames[k];
        match self.var_group(f.var) {
            g if g >= 0 => format!("q[{g}]"),
            _ => format!("m.base_state[{}]", f.var),
        }
    }

    /// Forward kinematics of frame `k`, folded (twin of one step of `gmp_fk` / `frame_poses`):
    /// declares `F<k>` and returns its entries as later code sees them (constants, or `F<k>.r[i]`
    /// / `F<k>.t[i]`). `parent`: the parent's entries.
    fn emit_frame_folded(
        &self,
        o: &mut Out,
        k: usize,
        parent: Option<&SymXf>,
    ) -> Result<SymXf, SpecialiseError> {
        let f = &self.m.frames[k];
        let what = || format!("frame {k}");
        o.line(format!(
            "// frame {k} (folded): {} joint on variable {}, parent {}",
            if f.kind == 0 { "revolute" } else { "prismatic" },
            f.var,
            f.parent
        ));
        let src = Sym::V(self.joint_source(k));
        let scaled = self.mul(o, &Sym::C(f.mult), &src)?;
        let qv = self.add(o, &scaled, &Sym::C(f.offset))?;
        let zero = || Sym::C(0.0);
        let (x, y, z) = (Sym::C(f.axis[0]), Sym::C(f.axis[1]), Sym::C(f.axis[2]));
        let local: SymXf = if f.kind == 0 {
            // gmp_axis_angle: t = 1 - c; entries `t * a * b +- s * c` in its order.
            let n = self.next_tmp.get();
            self.next_tmp.set(n + 1);
            o.line(format!("float _s{n}, _c{n};"));
            o.line(format!("gmp_sincos({}, &_s{n}, &_c{n});", qv.lit()?));
            let (s, c) = (Sym::V(format!("_s{n}")), Sym::V(format!("_c{n}")));
            let t = self.sub(o, &Sym::C(1.0), &c)?;
            let tt = |o: &mut Out, a: &Sym, b: &Sym| -> Result<Sym, SpecialiseError> {
                let ta = self.mul(o, &t, a)?;
                self.mul(o, &ta, b)
            };
            // Each product appears in two entries (`t x y` in r1 and r3, ...): computed once,
            // the same expression on the same values, so the same bits in both.
            let txx = tt(o, &x, &x)?;
            let r0 = self.add(o, &txx, &c)?;
            let txy = tt(o, &x, &y)?;
            let sz = self.mul(o, &s, &z)?;
            let r1 = self.sub(o, &txy, &sz)?;
            let txz = tt(o, &x, &z)?;
            let sy = self.mul(o, &s, &y)?;
            let r2 = self.add(o, &txz, &sy)?;
            let r3 = self.add(o, &txy, &sz)?;
            let tyy = tt(o, &y, &y)?;
            let r4 = self.add(o, &tyy, &c)?;
            let tyz = tt(o, &y, &z)?;
            let sx = self.mul(o, &s, &x)?;
            let r5 = self.sub(o, &tyz, &sx)?;
            let r6 = self.sub(o, &txz, &sy)?;
            let r7 = self.add(o, &tyz, &sx)?;
            let tzz = tt(o, &z, &z)?;
            let r8 = self.add(o, &tzz, &c)?;
            [r0, r1, r2, r3, r4, r5, r6, r7, r8, zero(), zero(), zero()]
        } else {
            let tx = self.mul(o, &x, &qv)?;
            let ty = self.mul(o, &y, &qv)?;
            let tz = self.mul(o, &z, &qv)?;
            let (one, z0) = (|| Sym::C(1.0), zero);
            [
                one(),
                z0(),
                z0(),
                z0(),
                one(),
                z0(),
                z0(),
                z0(),
                one(),
                tx,
                ty,
                tz,
            ]
        };
        let mut origin: SymXf = std::array::from_fn(|_| Sym::C(0.0));
        for (slot, &v) in origin.iter_mut().zip(f.origin.r.iter().chain(&f.origin.t)) {
            Lit::f(v, what)?;
            *slot = Sym::C(v);
        }
        let joint = self.mul_sym(o, &origin, &local)?;
        let world = match parent {
            Some(p) => self.mul_sym(o, p, &joint)?,
            None => joint,
        };
        o.line(format!("Xf F{k};"));
        let mut seen: SymXf = std::array::from_fn(|_| Sym::C(0.0));
        for (i, v) in world.iter().enumerate() {
            let field = if i < 9 {
                format!("F{k}.r[{i}]")
            } else {
                format!("F{k}.t[{}]", i - 9)
            };
            o.line(format!("{field} = {};", v.lit()?));
            seen[i] = match v {
                Sym::C(x) => Sym::C(*x),
                Sym::V(_) => Sym::V(field),
            };
        }
        Ok(seen)
    }

    /// Forward kinematics of frame `k` as the layout writes it: folded
    /// ([`Gen::emit_frame_folded`], on the parent's folded transform) or not ([`emit_frame`]).
    /// Declares `F<k>` either way.
    fn emit_frame(&self, o: &mut Out, k: usize) -> Result<(), SpecialiseError> {
        if !self.fold {
            return emit_frame(o, self.m, k, &|v| self.var_group(v));
        }
        let parent = match self.m.frames[k].parent {
            p if p >= 0 => self.frame_syms.get(p as usize),
            _ => None,
        };
        self.emit_frame_folded(o, k, parent).map(|_| ())
    }

    /// The folded transforms of every frame (as [`Gen::emit_frame_folded`] returns them), from
    /// a dry run.
    fn fold_frames(&self) -> Result<Vec<SymXf>, SpecialiseError> {
        let mut scratch = Out {
            s: String::new(),
            indent: 0,
        };
        let mut syms: Vec<SymXf> = Vec::with_capacity(self.m.frames.len());
        for k in 0..self.m.frames.len() {
            let parent = match self.m.frames[k].parent {
                p if p >= 0 => Some(syms.get(p as usize).cloned().ok_or_else(|| {
                    SpecialiseError::Inconsistent(format!("frame {k}: parent {p}"))
                })?),
                _ => None,
            };
            let x = self.emit_frame_folded(&mut scratch, k, parent.as_ref())?;
            syms.push(x);
        }
        Ok(syms)
    }

    /// Folded code only: the joint-value guard at the top of `gmp_spec_valid` (see
    /// [`Layout::folds`]): configurations with a joint value outside `[-1e4, 1e4]` (or NaN) go
    /// to the unfolded table-driven twin.
    fn emit_fold_guard(&self, o: &mut Out, fallback: &[&str]) -> Result<(), SpecialiseError> {
        let mut conds = Vec::new();
        for (k, f) in self.m.frames.iter().enumerate() {
            let what = || format!("frame {k}");
            conds.push(format!(
                "fabsf({} * {} + {}) <= 1e4f",
                Lit::f(f.mult, what)?,
                self.joint_source(k),
                Lit::f(f.offset, what)?
            ));
        }
        if conds.is_empty() {
            return Ok(());
        }
        o.open(format!("if (!({})) {{", conds.join(" && ")));
        o.line("// Outside the range the folding is shown exact for: the unfolded twin.");
        for l in fallback {
            o.line(*l);
        }
        o.close("}");
        Ok(())
    }

    /// A new function scope.
    fn scope(&self, stored_frames: bool) -> Scope {
        Scope {
            frames: vec![false; self.m.frames.len()],
            bodies: vec![false; self.m.bodies.len()],
            root: false,
            stored_frames,
        }
    }

    /// The per-joint sweep steps `st<k>` (body_sweep: `diff[k].abs() / segments as f32`).
    fn emit_steps(&self, o: &mut Out) {
        if self.step_groups.is_empty() {
            return;
        }
        let names: Vec<String> = self
            .step_groups
            .iter()
            .map(|k| format!("st{k} = 0.0f"))
            .collect();
        o.line(format!("float {};", names.join(", ")));
        o.open("if (SWEEP) {");
        o.line("const float nf = (float)n;");
        for k in &self.step_groups {
            o.line(format!("st{k} = fabsf(diff[{k}]) / nf;"));
        }
        o.close("}");
    }

    /// Declares frame `f`'s transform in the scope (stored frames only; computed ones are
    /// declared by [`emit_frame`]).
    fn ensure_frame(&self, o: &mut Out, sc: &mut Scope, f: i32) {
        if f < 0 {
            if !sc.root {
                o.line("const Xf FR = xf_identity();");
                sc.root = true;
            }
        } else if sc.stored_frames && !sc.frames[f as usize] {
            o.line(format!("const Xf F{f} = fr[{f}];"));
            sc.frames[f as usize] = true;
        }
    }

    /// Declares body `bi`'s world centre `c<bi>` and sweep `e<bi>` (twin of `body_sweep`).
    fn ensure_body(&self, o: &mut Out, sc: &mut Scope, bi: usize) -> Result<(), SpecialiseError> {
        if sc.bodies[bi] {
            return Ok(());
        }
        sc.bodies[bi] = true;
        let m = self.m;
        let b = &m.bodies[bi];
        self.ensure_frame(o, sc, b.frame);
        o.line(format!(
            "// body {bi} (link {}, {} vertices, {} covering spheres)",
            b.link, b.vert_count, b.sphere_count
        ));
        let centre = self.world_point(o, b.frame, &b.center, &|| format!("body {bi} centre"))?;
        o.line(format!("const V3 c{bi} = {centre};"));
        o.line(format!("float e{bi} = 0.0f;"));
        let terms = self.sweep_terms(bi)?;
        o.open("if (SWEEP) {");
        o.line("float a = 0.0f;");
        for t in terms {
            o.line(t);
        }
        o.line(format!("e{bi} = 0.5f * a;"));
        o.close("}");
        Ok(())
    }

    /// The terms of body `bi`'s sweep sum (twin of `body_sweep`: `a = a + |mult| * step * reach`
    /// per planning-group frame, last frame first; the sweep is `0.5f * a`).
    fn sweep_terms(&self, bi: usize) -> Result<Vec<String>, SpecialiseError> {
        let m = self.m;
        let nf = m.frames.len();
        let mut terms = Vec::new();
        for (f, fr) in m.frames.iter().enumerate().rev() {
            let k = self.var_group(fr.var);
            if k < 0 {
                continue;
            }
            terms.push(format!(
                "a = a + {} * st{k} * {};",
                Lit::f(fr.mult.abs(), || format!("frame {f} multiplier"))?,
                Lit::f(m.reach[bi * nf + f], || format!("reach of body {bi}"))?
            ));
        }
        Ok(terms)
    }

    /// The obstacle and self-pair tests of one frame group (its bodies and the pairs whose later
    /// body it holds), pairs ordered by their other body so that its centre is needed briefly.
    fn emit_group(
        &self,
        o: &mut Out,
        sc: &mut Scope,
        bodies: &[usize],
        pairs: &[usize],
        stats: &mut SpecialiseStats,
    ) -> Result<(), SpecialiseError> {
        for &bi in bodies {
            self.ensure_body(o, sc, bi)?;
        }
        emit_obstacle_tests(o, self, bodies, stats)?;
        let m = self.m;
        // (frame of the other body, other body, own body, pair): the body outside this group
        // (or either, when both are in it).
        let mut order: Vec<(i32, usize, usize, usize)> = pairs
            .iter()
            .map(|&pi| {
                let [a, b] = m.self_pairs[pi];
                let (own, other) = if bodies.contains(&(a as usize)) {
                    (a, b)
                } else {
                    (b, a)
                };
                let other = other as usize;
                (m.bodies[other].frame, other, own as usize, pi)
            })
            .collect();
        order.sort_unstable();
        // Pairs of sphere bodies between this group and one other frame, many enough, go
        // under one test of the two sides' bounds (see [`Cull`]; a pair test fires only when
        // the bounds' test does).
        let plain = |&(_, other, own, _): &(i32, usize, usize, usize)| {
            is_plain_sphere(m, &m.bodies[other]) && is_plain_sphere(m, &m.bodies[own])
        };
        let mut k = 0;
        while k < order.len() {
            let FrameBlock {
                frame,
                rows: block,
                culled,
                rest,
                own,
                other,
            } = frame_block(&order, k, plain);
            k += block.len();
            if own.is_empty() || culled.len() < PAIR_CULL_MIN {
                for &(_, other, _, pi) in block {
                    self.ensure_body(o, sc, other)?;
                    emit_pair(o, m, pi, &self.mg, stats)?;
                }
                continue;
            };
            let (cp, rp, _, _) = bound_of(m, &own);
            let (cq, rq, _, _) = bound_of(m, &other);
            for &bi in own.iter().chain(&other) {
                self.ensure_body(o, sc, bi)?;
            }
            let sweep = |list: &[usize]| {
                let mut e = format!("e{}", list[0]);
                for b in &list[1..] {
                    e = format!("fmaxf({e}, e{b})");
                }
                e
            };
            let what = || format!("pair culling bound, bodies {own:?} / {other:?}");
            o.open(format!(
                "{{ // {} sphere pairs with frame {frame} under one bound test",
                culled.len()
            ));
            let pa = self.world_point(o, m.bodies[own[0]].frame, &cp, &what)?;
            let pb = self.world_point(o, frame, &cq, &what)?;
            o.line(format!("const V3 d = gmp_sub({pa}, {pb});"));
            o.line(format!(
                "const float rr = {} + {} + {} + {} + {};",
                Lit::f(rp, what)?,
                Lit::f(rq, what)?,
                self.mg,
                sweep(&own),
                sweep(&other)
            ));
            o.open("if (gmp_dot(d, d) <= rr * rr) {");
            for &&(_, _, _, pi) in &culled {
                emit_pair(o, m, pi, &self.mg, stats)?;
            }
            o.close("}");
            o.close("}");
            stats.cull_pair_bounds += 1;
            for &&(_, other, _, pi) in &rest {
                self.ensure_body(o, sc, other)?;
                emit_pair(o, m, pi, &self.mg, stats)?;
            }
        }
        Ok(())
    }
}

/// A row of the self-pair emission order: (the other body's frame, the other body, this
/// group's body, the pair's index in [`CollisionModel::self_pairs`]).
type PairRow = (i32, usize, usize, usize);

/// The rows of a sorted emission order that share one other frame (see [`frame_block`]).
struct FrameBlock<'a> {
    /// The other frame.
    frame: i32,
    /// Every row with that frame.
    rows: &'a [PairRow],
    /// The rows whose pair may go under one bound test of the two sides (`plain`).
    culled: Vec<&'a PairRow>,
    /// The other rows.
    rest: Vec<&'a PairRow>,
    /// This group's bodies in `culled`, sorted, each once.
    own: Vec<usize>,
    /// The other frame's bodies in `culled`, sorted, each once.
    other: Vec<usize>,
}

/// The block of `order` (sorted by frame) that starts at row `k`, its rows split by `plain`.
fn frame_block<'a>(
    order: &'a [PairRow],
    k: usize,
    plain: impl Fn(&PairRow) -> bool,
) -> FrameBlock<'a> {
    let frame = order[k].0;
    let end = k + order[k..].iter().take_while(|p| p.0 == frame).count();
    let rows = &order[k..end];
    let (culled, rest): (Vec<&PairRow>, Vec<&PairRow>) = rows.iter().partition(|p| plain(p));
    let sorted = |f: fn(&PairRow) -> usize| {
        let mut v: Vec<usize> = culled.iter().map(|p| f(p)).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let own = sorted(|p| p.2);
    let other = sorted(|p| p.1);
    FrameBlock {
        frame,
        rows,
        culled,
        rest,
        own,
        other,
    }
}

/// Generates the specialised translation unit for `model` in the layout it suits
/// ([`Layout::for_model`]).
pub fn generate(model: &CollisionModel) -> Result<SpecialisedSource, SpecialiseError> {
    generate_with(model, Layout::for_model(model))
}

/// Generates the specialised translation unit for `model` in `layout`.
pub fn generate_with(
    model: &CollisionModel,
    layout: Layout,
) -> Result<SpecialisedSource, SpecialiseError> {
    let m = model;
    let nb = m.bodies.len();
    let nf = m.frames.len();
    if nb > MAX_BODIES {
        return Err(SpecialiseError::TooLarge {
            what: format!("{nb} bodies"),
            limit: MAX_BODIES,
        });
    }
    if m.self_pairs.len() > MAX_SELF_PAIRS {
        return Err(SpecialiseError::TooLarge {
            what: format!("{} self pairs", m.self_pairs.len()),
            limit: MAX_SELF_PAIRS,
        });
    }
    if m.dof() == 0 || m.dof() > super::MAX_DOF {
        return Err(SpecialiseError::TooLarge {
            what: format!("{} planning-group joints", m.dof()),
            limit: super::MAX_DOF,
        });
    }
    if m.reach.len() != nb * nf {
        return Err(SpecialiseError::Inconsistent(format!(
            "reach table has {} entries for {nb} bodies x {nf} frames",
            m.reach.len()
        )));
    }
    for (k, f) in m.frames.iter().enumerate() {
        if f.parent >= k as i32 || f.var as usize >= m.num_vars {
            return Err(SpecialiseError::Inconsistent(format!(
                "frame {k}: parent {} / variable {} of {}",
                f.parent, f.var, m.num_vars
            )));
        }
    }
    for (i, b) in m.bodies.iter().enumerate() {
        if b.frame >= nf as i32 {
            return Err(SpecialiseError::Inconsistent(format!(
                "body {i} on frame {} of {nf}",
                b.frame
            )));
        }
        covering(m, b)?;
    }
    for p in &m.self_pairs {
        if p[0] as usize >= nb || p[1] as usize >= nb {
            return Err(SpecialiseError::Inconsistent(format!(
                "self pair {p:?} of {nb} bodies"
            )));
        }
    }
    let mut gen = Gen {
        m,
        mg: Lit::f(m.margin, || "margin".into())?,
        step_groups: Vec::new(),
        fold: layout.folds(),
        frame_syms: Vec::new(),
        next_tmp: std::cell::Cell::new(0),
    };
    if gen.fold {
        gen.frame_syms = gen.fold_frames()?;
    }
    let mut step_groups: Vec<i32> = m
        .frames
        .iter()
        .map(|f| gen.var_group(f.var))
        .filter(|&k| k >= 0)
        .collect();
    step_groups.sort_unstable();
    step_groups.dedup();
    gen.step_groups = step_groups;
    let mut stats = SpecialiseStats {
        dof: m.dof(),
        frames: nf,
        bodies: nb,
        layout: layout.name().into(),
        ..Default::default()
    };

    // Bodies grouped by frame: the root's first, then each frame as forward kinematics reaches it.
    let group_of = |b: &BodyModel| (b.frame + 1) as usize;
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); nf + 1];
    for (i, b) in m.bodies.iter().enumerate() {
        groups[group_of(b)].push(i);
    }
    // Each pair is tested with the later of its two bodies' groups.
    let mut pairs_of: Vec<Vec<usize>> = vec![Vec::new(); nf + 1];
    for (pi, p) in m.self_pairs.iter().enumerate() {
        let (a, b) = (&m.bodies[p[0] as usize], &m.bodies[p[1] as usize]);
        pairs_of[group_of(a).max(group_of(b))].push(pi);
    }
    let busy = |g: usize| !groups[g].is_empty() || !pairs_of[g].is_empty();

    let mut o = Out {
        s: String::new(),
        indent: 0,
    };
    o.line("// ---- generated by src/gpu/specialise.rs from the loaded robot: do not edit ----");
    o.line(format!(
        "// {} joints, {nf} moving frames, {nb} bodies, {} self pairs, margin {}; {} layout",
        m.dof(),
        m.self_pairs.len(),
        m.margin,
        layout.name()
    ));
    o.line("// Twin of cpu.rs frames_valid after frame_poses (see the module documentation of");
    o.line("// specialise.rs): SWEEP grows every body by its sweep for the motion (diff, n).");
    let mut half = false;
    let mut tri = false;
    let mut prox_reach = None;
    if layout.base() == Layout::Looped {
        let order = match layout {
            Layout::LoopedGated => LoopOrder::Gated,
            Layout::Streamed => LoopOrder::Streamed,
            _ => LoopOrder::Plain,
        };
        let compact = layout.compact();
        (half, tri) = emit_looped(
            &mut o,
            &gen,
            &groups,
            &pairs_of,
            order,
            compact,
            layout.half(),
            &mut stats,
            &mut prox_reach,
        )?;
    } else {
        // Grouped layout: chunks of each frame's bodies, in order; each pair goes to the chunk of
        // its later body.
        let mut chunks: Vec<(usize, Vec<usize>)> = Vec::new();
        let mut chunk_of = vec![0usize; nb];
        for (g, bodies) in groups.iter().enumerate() {
            for part in bodies.chunks(CHUNK_BODIES) {
                for &b in part {
                    chunk_of[b] = chunks.len();
                }
                chunks.push((g, part.to_vec()));
            }
        }
        let mut chunk_pairs: Vec<Vec<usize>> = vec![Vec::new(); chunks.len()];
        for (pi, p) in m.self_pairs.iter().enumerate() {
            chunk_pairs[chunk_of[p[0] as usize].max(chunk_of[p[1] as usize])].push(pi);
        }
        let grouped = layout.base() == Layout::Grouped;
        if grouped {
            for (c, (_, bodies)) in chunks.iter().enumerate() {
                o.line("template <bool SWEEP>");
                o.open(format!(
                    "__device__ __noinline__ bool gmp_spec_chunk{c}(const GmpModel& m, const Xf* fr, const float* diff, unsigned n) {{"
                ));
                o.line("bool hit = false;");
                gen.emit_steps(&mut o);
                let mut sc = gen.scope(true);
                gen.emit_group(&mut o, &mut sc, bodies, &chunk_pairs[c], &mut stats)?;
                o.line("return !hit;");
                o.close("}");
                o.line("");
            }
        }
        o.line("template <bool SWEEP>");
        o.open("__device__ __noinline__ bool gmp_spec_valid(const GmpModel& m, const float* q, const float* diff, unsigned n) {");
        let mut sc = gen.scope(false);
        if gen.fold {
            gen.emit_fold_guard(
                &mut o,
                &[
                    "Xf frs[GMP_MAX_FRAMES];",
                    "gmp_fk(m, q, frs);",
                    "return gmp_frames_valid(m, frs, SWEEP ? diff : nullptr, n);",
                ],
            )?;
        }
        if grouped {
            o.line(format!("Xf fr[{}];", nf.max(1)));
        } else {
            o.line("bool hit = false;");
            gen.emit_steps(&mut o);
        }
        for g in 0..=nf {
            if g > 0 {
                let k = g - 1;
                gen.emit_frame(&mut o, k)?;
                if grouped {
                    o.line(format!("fr[{k}] = F{k};"));
                }
            }
            if !busy(g) {
                continue;
            }
            match grouped {
                false => {
                    gen.emit_group(&mut o, &mut sc, &groups[g], &pairs_of[g], &mut stats)?;
                    o.line("if (hit) return false;");
                }
                true => {
                    for (c, _) in chunks.iter().enumerate().filter(|(_, (cg, _))| *cg == g) {
                        o.line(format!(
                            "if (!gmp_spec_chunk{c}<SWEEP>(m, fr, diff, n)) return false;"
                        ));
                    }
                }
            }
        }
        o.line("return true;");
        o.close("}");
    }
    o.line("");
    o.line("__device__ __forceinline__ bool gmp_spec_config_valid(const GmpModel& m, const float* q) {");
    o.line("    return gmp_spec_valid<false>(m, q, nullptr, 0u);");
    o.line("}");
    if half {
        o.line("");
        o.line("// The f16-slot pass (Layout::LoopedHalf): 0 free, 1 in collision (both as the exact tests");
        o.line("// say), 2 undecided: some test within the rounding bound of its reach, a centre beyond the");
        o.line("// f16 range; check_configs_half leaves those to check_configs_rest (the exact tests).");
        o.line("__device__ __forceinline__ unsigned gmp_spec_config_half(const GmpModel& m, const float* q) {");
        o.line("    bool und = false;");
        o.line("    if (gmp_spec_valid<false, true>(m, q, nullptr, 0u, &und)) return 0u;");
        o.line("    return und ? 2u : 1u;");
        o.line("}");
        o.line("#define GMP_CONFIG_HALF(m, q) gmp_spec_config_half(m, q)");
    }
    o.line("");
    o.line("// gmp_motion_step_status with the specialised tests.");
    o.line("__device__ __forceinline__ unsigned gmp_spec_step_status(const GmpModel& m, const float* q,");
    o.line(
        "                                                         const float* diff, unsigned n) {",
    );
    if tri {
        o.line("#ifndef GMP_SPEC_TRI");
        o.line("#define GMP_SPEC_TRI 1");
        o.line("#endif");
        o.line("#if GMP_SPEC_TRI");
        o.line("    // One pass (see the TRI build of gmp_spec_valid).");
        o.line("    bool und = false;");
        o.line("    if (gmp_spec_valid<true, false, true>(m, q, diff, n, &und)) return 0u;");
        o.line("    return und ? 2u : 1u;");
        o.line("#else");
    }
    o.line("    if (gmp_spec_valid<true>(m, q, diff, n)) return 0u;");
    o.line("    if (!gmp_spec_valid<false>(m, q, nullptr, 0u)) return 1u;");
    o.line("    return 2u;");
    if tri {
        o.line("#endif");
    }
    o.line("}");
    o.line("");
    o.line("#define GMP_CONFIG_VALID(m, q) gmp_spec_config_valid(m, q)");
    o.line("#define GMP_STEP_STATUS(m, q, diff, n) gmp_spec_step_status(m, q, diff, n)");
    o.line(format!("#define GMP_DOF(m) {}u", m.dof()));
    o.line("// ---- end of generated code ----");
    stats.self_pairs = m.self_pairs.len();
    let generated = o.s;
    stats.generated_bytes = generated.len();
    let common = super::kernels::COMMON_CUH;
    let collision = super::kernels::COLLISION_CU;
    let mut source = String::with_capacity(common.len() + generated.len() + collision.len() + 96);
    source.push_str("// ---- common.cuh ----\n");
    source.push_str(common);
    source.push('\n');
    source.push_str(&generated);
    source.push_str("// ---- collision.cu ----\n");
    source.push_str(collision);
    Ok(SpecialisedSource {
        source,
        generated,
        stats,
        prox_reach,
    })
}

/// Forward kinematics of frame `k` (twin of one step of `gmp_fk` / `frame_poses`).
fn emit_frame(
    o: &mut Out,
    m: &CollisionModel,
    k: usize,
    var_group: &impl Fn(u32) -> i32,
) -> Result<(), SpecialiseError> {
    let f = &m.frames[k];
    let what = || format!("frame {k}");
    let src = match var_group(f.var) {
        g if g >= 0 => format!("q[{g}]"),
        _ => format!("m.base_state[{}]", f.var),
    };
    o.line(format!(
        "// frame {k}: {} joint on variable {}, parent {}",
        if f.kind == 0 { "revolute" } else { "prismatic" },
        f.var,
        f.parent
    ));
    o.line(format!("Xf {};", frame_name(k as i32)));
    o.open("{");
    o.line(format!(
        "const float qv = {} * {src} + {};",
        Lit::f(f.mult, what)?,
        Lit::f(f.offset, what)?
    ));
    o.line("Xf org;");
    for (i, v) in f.origin.r.iter().enumerate() {
        o.line(format!("org.r[{i}] = {};", Lit::f(*v, what)?));
    }
    for (i, v) in f.origin.t.iter().enumerate() {
        o.line(format!("org.t[{i}] = {};", Lit::f(*v, what)?));
    }
    o.line(format!(
        "const float ax[3] = {{{}, {}, {}}};",
        Lit::f(f.axis[0], what)?,
        Lit::f(f.axis[1], what)?,
        Lit::f(f.axis[2], what)?
    ));
    o.line(format!(
        "const Xf jf = gmp_joint_frame(org, ax, {}u, qv);",
        f.kind
    ));
    if f.parent < 0 {
        o.line(format!("{} = jf;", frame_name(k as i32)));
    } else {
        o.line(format!(
            "{} = xf_mul({}, jf);",
            frame_name(k as i32),
            frame_name(f.parent)
        ));
    }
    o.close("}");
    Ok(())
}

/// Fewest sphere pairs between two frames put under one bound test.
const PAIR_CULL_MIN: usize = 4;
/// Fewest bodies under one culling bound (smaller sets are tested body by body).
const CULL_MIN_BODIES: usize = 3;
/// A set of more bodies than this is split into parts under their own bounds.
const CULL_SPLIT_ABOVE: usize = 8;
/// Most bodies per part of a split set.
const CULL_PART_BODIES: usize = 6;

/// A node of the obstacle-culling tree over one group's bodies: a bounding sphere (in the
/// bodies' common frame) that holds every body's bounding sphere, padded, and either the
/// bodies themselves or parts with their own bounds.
///
/// # Why culling cannot change a verdict
/// A body's obstacle test fires when its centre is within `r_b + e_b + margin` of the obstacle
/// (`gmp_near_*`). With `R >= |c - c_b| + r_b` and `e = max e_b`, such a centre puts the bound's
/// centre `c` within `R + e + margin` of the obstacle (triangle inequality), so the bound's
/// test fires too: when it does not, no body under it can fire, and the skipped tests would
/// all have said "not near". `R` is computed in f64 and padded by `1e-4 (R + 1)` (rounded up
/// to an f32), orders of magnitude more than the f32 rounding of the two tests (a few ulps of
/// the coordinates). Both centres are mapped by the same frame, a rigid transform.
struct Cull {
    /// Centre in the frame and padded radius (`None`: too few bodies to bound).
    bound: Option<(V3, f32)>,
    /// Bodies tested under this node directly.
    bodies: Vec<usize>,
    /// Parts with their own bounds.
    parts: Vec<Cull>,
}

impl Cull {
    /// The culling tree of `bodies` (all on one frame).
    fn new(m: &CollisionModel, bodies: &[usize]) -> Cull {
        if bodies.len() < CULL_MIN_BODIES {
            return Cull {
                bound: None,
                bodies: bodies.to_vec(),
                parts: Vec::new(),
            };
        }
        let (centre32, r32, lo, hi) = bound_of(m, bodies);
        let c = |bi: usize| m.bodies[bi].center.map(f64::from);
        if bodies.len() <= CULL_SPLIT_ABOVE {
            return Cull {
                bound: Some((centre32, r32)),
                bodies: bodies.to_vec(),
                parts: Vec::new(),
            };
        }
        // Split along the longest side of the box, in runs of neighbours.
        let axis = (0..3)
            .max_by(|&a, &b| (hi[a] - lo[a]).total_cmp(&(hi[b] - lo[b])))
            .unwrap_or(0);
        let mut sorted = bodies.to_vec();
        sorted.sort_by(|&a, &b| c(a)[axis].total_cmp(&c(b)[axis]).then(a.cmp(&b)));
        let n_parts = sorted.len().div_ceil(CULL_PART_BODIES);
        let per = sorted.len().div_ceil(n_parts);
        Cull {
            bound: Some((centre32, r32)),
            bodies: Vec::new(),
            parts: sorted.chunks(per).map(|p| Cull::new(m, p)).collect(),
        }
    }

    /// Declares the world centre of every bound (`k<id>`), ids in depth-first order.
    fn declare(
        &self,
        o: &mut Out,
        gen: &Gen,
        frame: i32,
        tag: usize,
        id: &mut usize,
    ) -> Result<(), SpecialiseError> {
        if let Some((c, _)) = &self.bound {
            let w = gen.world_point(o, frame, c, &|| format!("culling bound {tag}_{id}"))?;
            o.line(format!("const V3 k{tag}_{id} = {w};"));
            *id += 1;
        }
        for p in &self.parts {
            p.declare(o, gen, frame, tag, id)?;
        }
        Ok(())
    }

    /// The tests under this node with `func`, each bound first (same ids as [`Cull::declare`]).
    fn emit(
        &self,
        o: &mut Out,
        m: &CollisionModel,
        (func, mg, tag): (&str, &str, usize),
        id: &mut usize,
        stats: &mut SpecialiseStats,
    ) -> Result<(), SpecialiseError> {
        let opened = match &self.bound {
            Some((_, r)) => {
                o.open(format!(
                    "if ({func}(k{tag}_{id}, {} + ge{tag}, o, {mg})) {{",
                    Lit::f(*r, || format!("culling bound {tag}_{id}"))?
                ));
                *id += 1;
                stats.cull_bounds += 1;
                true
            }
            None => false,
        };
        for &bi in &self.bodies {
            o.line(format!(
                "n{bi} = {func}(c{bi}, {} + e{bi}, o, {mg});",
                Lit::f(m.bodies[bi].radius, || format!("body {bi} radius"))?
            ));
        }
        for p in &self.parts {
            p.emit(o, m, (func, mg, tag), id, stats)?;
        }
        if opened {
            o.close("}");
        }
        Ok(())
    }
}

/// The group's bodies against every obstacle slot (twin of the obstacle loop of `frames_valid`):
/// one pass over the obstacles, each slot's kind dispatched once for all the group's bodies,
/// bodies culled by the bounds of a [`Cull`] tree first.
fn emit_obstacle_tests(
    o: &mut Out,
    gen: &Gen,
    bodies: &[usize],
    stats: &mut SpecialiseStats,
) -> Result<(), SpecialiseError> {
    let (m, mg) = (gen.m, gen.mg.as_str());
    if bodies.is_empty() {
        return Ok(());
    }
    let tree = Cull::new(m, bodies);
    // Every body of a group is on the same frame.
    let tag = bodies[0];
    if tree.bound.is_some() {
        tree.declare(o, gen, m.bodies[tag].frame, tag, &mut 0)?;
        let sweeps: Vec<String> = bodies.iter().map(|b| format!("e{b}")).collect();
        let mut e = sweeps[0].clone();
        for s in &sweeps[1..] {
            e = format!("fmaxf({e}, {s})");
        }
        o.line(format!("const float ge{tag} = {e};"));
    }
    o.open("for (unsigned oi = 0; oi < m.num_obstacles; oi++) {");
    o.line("const GmpObstacle o = m.obstacles[oi];");
    o.line("if (o.kind == GMP_NONE) continue;");
    let flags: Vec<String> = bodies.iter().map(|b| format!("n{b} = false")).collect();
    o.line(format!("bool {};", flags.join(", ")));
    let mut kinds = vec![
        ("o.kind == GMP_BOX", "gmp_near_box"),
        ("o.kind == GMP_CYLINDER", "gmp_near_cylinder"),
        (
            "o.kind == GMP_SPHERE || o.kind == GMP_MESH",
            "gmp_near_ball",
        ),
    ];
    if gen.fold {
        // Rotations about z (the same branch for every thread: one obstacle at a time).
        o.line("const bool zr = gmp_obstacle_zrot(o);");
        kinds.insert(0, ("o.kind == GMP_BOX && zr", "gmp_near_box_z"));
        kinds.insert(2, ("o.kind == GMP_CYLINDER && zr", "gmp_near_cylinder_z"));
    }
    for (k, (cond, func)) in kinds.into_iter().enumerate() {
        if k == 0 {
            o.open(format!("if ({cond}) {{"));
        } else {
            o.mid(format!("}} else if ({cond}) {{"));
        }
        let mut st = SpecialiseStats::default();
        tree.emit(o, m, (func, mg, tag), &mut 0, &mut st)?;
        if k == 0 {
            stats.cull_bounds += st.cull_bounds;
        }
    }
    o.close("}");
    // Sphere bodies without a covering test against a primitive: the distance test was exact.
    let (points, general): (Vec<usize>, Vec<usize>) = bodies
        .iter()
        .partition(|&&bi| m.bodies[bi].vert_count == 1 && !env_covering(&m.bodies[bi]));
    if !points.is_empty() {
        let any: Vec<String> = points.iter().map(|b| format!("n{b}")).collect();
        o.open("if (o.kind != GMP_MESH) {");
        o.line(format!("hit |= {};", any.join(" | ")));
        o.mid("} else {");
        for &bi in &points {
            emit_env_fine(o, m, bi);
        }
        o.close("}");
    }
    for &bi in &general {
        emit_env_fine(o, m, bi);
    }
    o.close("}");
    Ok(())
}

/// The rest of a (body, obstacle) test once its bounding test fired: covering spheres and the
/// exact test, out of line and table-driven (`gmp_body_obstacle_clear` of the generic kernel).
fn emit_env_fine(o: &mut Out, m: &CollisionModel, bi: usize) {
    o.line(format!(
        "if (n{bi} && (hit || !gmp_body_obstacle_clear_at(m, {}, {bi}u, oi, c{bi}, e{bi}))) return false;",
        frame_name(m.bodies[bi].frame)
    ));
}

/// Self pair `pi` (twin of the pair loop of `frames_valid`).
fn emit_pair(
    o: &mut Out,
    m: &CollisionModel,
    pi: usize,
    mg: &str,
    stats: &mut SpecialiseStats,
) -> Result<(), SpecialiseError> {
    let [ia, ib] = m.self_pairs[pi];
    let (ia, ib) = (ia as usize, ib as usize);
    let (ba, bb) = (&m.bodies[ia], &m.bodies[ib]);
    let (sa, sb) = (covering(m, ba)?, covering(m, bb)?);
    if sa.is_empty() || sb.is_empty() {
        // The CPU's covering loop finds nothing near: never a collision.
        stats.skipped_pairs += 1;
        return Ok(());
    }
    let ra = Lit::f(ba.radius, || format!("body {ia} radius"))?;
    let rb = Lit::f(bb.radius, || format!("body {ib} radius"))?;
    o.open(format!("{{ // pair {pi}: bodies {ia}, {ib}"));
    o.line(format!("const V3 d = gmp_sub(c{ia}, c{ib});"));
    // The pair's own growths (sweep.rs Sweep::pair), looked up only where the bodies' whole
    // sweeps, no smaller, do not already put the two out of reach (then so do their own).
    o.line(format!("float ea = e{ia}, eb = e{ib};"));
    o.open("if (SWEEP) {");
    o.line(format!("const float rw = {ra} + {rb} + {mg} + ea + eb;"));
    o.line(format!(
        "if (!(gmp_dot(d, d) > rw * rw)) gmp_pair_sweeps_at(m, {ia}u, {ib}u, diff, n, &ea, &eb);"
    ));
    o.close("}");
    o.line(format!("const float rr = {ra} + {rb} + {mg} + ea + eb;"));
    if is_plain_sphere(m, ba) && is_plain_sphere(m, bb) {
        // Not farther than rr, then the identical covering test, then a collision.
        stats.sphere_pairs += 1;
        o.line("hit |= gmp_dot(d, d) <= rr * rr;");
        o.close("}");
        return Ok(());
    }
    o.line(format!(
        "if (!(gmp_dot(d, d) > rr * rr) && (hit || !gmp_pair_clear_at(m, {}, {}, {ia}u, {ib}u, ea, eb, d))) return false;",
        frame_name(ba.frame),
        frame_name(bb.frame)
    ));
    stats.fine_pairs += 1;
    o.close("}");
    Ok(())
}

/// Defined (to the cap) before a specialised unit compiled with a register cap
/// ([`super::CudaOptions::spec_maxrreg`]): the cap then replaces the launch bounds of the
/// [`Layout::Looped`] kernels.
pub const REGISTER_CAP_MACRO: &str = "GMP_SPEC_REGISTER_CAP";
/// [`Layout::Looped`]: blocks per SM the configuration kernel is built for
/// (`__launch_bounds__(128, 10)`: at most 48 registers per thread, 40 warps per SM). By
/// `ptxas -v` for the MBM Panda sphere model the loops need 48 registers without spilling, while
/// the rarely run out-of-line tests (GJK) would take 128 and set the count of the whole kernel.
/// Measured against 9 blocks (56 registers) and 12 (40): no faster (results/collision/README.md,
/// session 7).
pub const LOOPED_CONFIG_BLOCKS: u32 = 10;
/// [`Layout::Looped`]: blocks per SM the motion kernels are built for (at most 64 registers: the
/// sweeps make the loops need a few more).
pub const LOOPED_MOTION_BLOCKS: u32 = 8;
/// The f16 slot of [`Layout::LoopedHalf`]: store, load, and the growth that bounds the rounding.
///
/// # Why the f16 pass decides only as the exact tests do
/// Stored: each coordinate `x` of a world centre rounded to the nearest f16 `x'` (`cvt.rn`; the
/// host twin rounds the same way in software). For `|x| <= 65504`, `|x - x'| <= 2^-11 |x'|` (a
/// normal f16) or `<= 2^-25` (a subnormal one), so a centre and its rounding are at most
/// `sqrt(3) (2^-11 M + 2^-25) < 2^-10 M + 2^-24` apart, `M` the largest `|x'|` of the rounded
/// centre. Its growth `E = (2^-10 + 2^-16) M + 1e-4` (m) is that, plus the few-ulp f32 rounding
/// of a test made at either centre (`2^-16 M + 1e-4` covers sixteen ulps of every coordinate up
/// to 10 km, and 100 um), as with the culling bounds ([`Cull`]).
///
/// Every test of the pass (culling bounds, bodies against obstacles, sphere pairs) is the exact
/// code's test at the rounded centres with its reach grown by at least its centres' `E`: one that
/// does not fire there does not fire at the exact centres, so the skipped and passed tests all
/// say "not near" and "free" from the pass is the exact verdict. The first test of each grows by
/// `Eh`, the largest `E` of the configuration's centres (`gmp_lp_eh`: `gmp_lp_put` tracks the
/// largest `|x|`, and rounding to f16 is monotone and odd, so its f16 is the largest `M`; a
/// host-twin test checks that it equals the largest `E`), with no decoding of a bound per use; a
/// pair's reach `rab + 2 Eh` is one sum (one rounding, far inside the 100 um). Where that fires,
/// the test is made again grown by its centres' own `E`, so that only that test's verdict
/// counts: one `Eh` alone leaves pairs near the base undecided (the UR5's wrist, 1.9 m from the
/// origin, makes it 2 mm, and some UR5 sphere pairs always come within twice that: in the host
/// twin 66 % of its configurations, against 2 % with each centre's own). Where a grown body or
/// pair test fires (with its own `E`), the same test with its reach shrunk by that `E` (the
/// reach still `>= 0`: a radius `>= E`, a margin `>= 0`) fires only where the exact test fires
/// too: then the configuration is in collision, as the exact code finds (its culling never skips
/// a test that fires). Between the two the pass marks the configuration undecided and goes on (a
/// later test may still find a collision); undecided, the exact code decides. A centre beyond the
/// f16 range, or not finite, leaves the configuration undecided before any test (`gmp_lp_put`).
fn emit_half_slot(o: &mut Out) {
    o.line("// f32 -> f16 (round to nearest even) and back; the device uses the conversion instructions.");
    o.line("__device__ __forceinline__ unsigned short gmp_lp_to_h(float f) {");
    o.line("#ifdef __CUDACC__");
    o.line("    unsigned short h;");
    o.line("    asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));");
    o.line("    return h;");
    o.line("#else");
    o.line("    unsigned int x;");
    o.line("    memcpy(&x, &f, 4);");
    o.line("    const unsigned int sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;");
    o.line("    if (ax > 0x7f800000u) return (unsigned short)(sign | 0x7e00u);");
    o.line("    if (ax >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);");
    o.line("    if (ax < 0x38800000u) {");
    o.line("        float a;");
    o.line("        memcpy(&a, &ax, 4);");
    o.line("        return (unsigned short)(sign | (unsigned int)rintf(a * 16777216.0f));");
    o.line("    }");
    o.line("    unsigned int h = (((ax >> 23) - 112u) << 10) | ((ax & 0x7fffffu) >> 13);");
    o.line("    const unsigned int rem = ax & 0x1fffu;");
    o.line("    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) h++;");
    o.line("    return (unsigned short)(sign | h);");
    o.line("#endif");
    o.line("}");
    o.line("__device__ __forceinline__ float gmp_lp_from_h(unsigned short h) {");
    o.line("#ifdef __CUDACC__");
    o.line("    float f;");
    o.line("    asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));");
    o.line("    return f;");
    o.line("#else");
    o.line("    const unsigned int e = (h >> 10) & 0x1fu, mant = h & 0x3ffu;");
    o.line("    float v;");
    o.line("    if (e == 0u) {");
    o.line("        v = (float)mant * 5.9604644775390625e-8f;");
    o.line("    } else if (e == 31u) {");
    o.line("        v = mant != 0u ? NAN : INFINITY;");
    o.line("    } else {");
    o.line("        const unsigned int x = ((e + 112u) << 23) | (mant << 13);");
    o.line("        memcpy(&v, &x, 4);");
    o.line("    }");
    o.line("    return (h & 0x8000u) != 0u ? -v : v;");
    o.line("#endif");
    o.line("}");
    o.line("// A centre beyond the f16 range (or not finite) leaves the pass undecided before any test (ok).");
    o.line("// mx: the largest |coordinate| of the centres so far (for gmp_lp_eh).");
    o.line("__device__ __forceinline__ void gmp_lp_put(GmpLpSlotH* S, unsigned s, const V3& c, float, bool& ok, float& mx) {");
    o.line("    ok = ok && fabsf(c.x[0]) <= 65504.0f && fabsf(c.x[1]) <= 65504.0f && fabsf(c.x[2]) <= 65504.0f;");
    o.line("    mx = fmaxf(mx, fmaxf(fabsf(c.x[0]), fmaxf(fabsf(c.x[1]), fabsf(c.x[2]))));");
    o.line("    GmpLpSlotH v;");
    o.line("    v.x = gmp_lp_to_h(c.x[0]);");
    o.line("    v.y = gmp_lp_to_h(c.x[1]);");
    o.line("    v.z = gmp_lp_to_h(c.x[2]);");
    o.line("    S[s] = v;");
    o.line("}");
    o.line("__device__ __forceinline__ V3 gmp_lp_c(const GmpLpSlotH& s) {");
    o.line("    return v3(gmp_lp_from_h(s.x), gmp_lp_from_h(s.y), gmp_lp_from_h(s.z));");
    o.line("}");
    o.line("// (2^-10 + 2^-16) M + 1e-4, M the largest |coordinate| of the rounded centre (see emit_half_slot):");
    o.line("// on the decoded centre the test uses too, two max (|x| a free operand modifier) and a product.");
    o.line("__device__ __forceinline__ float gmp_lp_e(const GmpLpSlotH& s) {");
    o.line("    const V3 c = gmp_lp_c(s);");
    o.line("    const float mx = fmaxf(fabsf(c.x[0]), fmaxf(fabsf(c.x[1]), fabsf(c.x[2])));");
    o.line("    return mx * 0x1.04p-10f + 1e-4f;");
    o.line("}");
    o.line("// The largest gmp_lp_e of a configuration's centres, from the largest |coordinate| mx of their");
    o.line("// f32 values (every centre fits an f16): rounding to f16 is monotone and odd, so the f16 of mx");
    o.line("// is the largest |coordinate| of the rounded centres, and the same product and sum give the");
    o.line("// largest bound (see emit_half_slot).");
    o.line("__device__ __forceinline__ float gmp_lp_eh(float mx) {");
    o.line("    const float m = gmp_lp_from_h(gmp_lp_to_h(mx));");
    o.line("    return m * 0x1.04p-10f + 1e-4f;");
    o.line("}");
    o.line("// The growth of the pass's first (grown) tests: the configuration's largest bound eh, the same");
    o.line("// for every centre (no decoding per use); a test that fires is made again with the centre's own.");
    o.line(
        "__device__ __forceinline__ float gmp_lp_eg(const GmpLpSlotH&, float eh) { return eh; }",
    );
    o.line(
        "// A pair test's reach r grown by twice that bound (eh2 = eh + eh, exact), in one sum.",
    );
    o.line("__device__ __forceinline__ float gmp_lp_grow2(float r, const GmpLpSlotH&, const GmpLpSlotH&, float eh2) {");
    o.line("    return r + eh2;");
    o.line("}");
}

/// Most per-thread slots (world centres) of a [`Layout::Looped`] kernel.
pub const MAX_LOOPED_SLOTS: usize = 8192;
/// [`Layout::Looped`] tables up to this size go to constant memory, larger ones to global memory.
const LOOPED_CONSTANT_BYTES: usize = 48 * 1024;
/// [`Layout::Looped`]: self pairs are tested this many at a time, all with one body (groups
/// padded with rows whose radius is a NaN, which no comparison passes).
pub const LOOPED_PAIR_GROUP: usize = 4;
/// [`Layout::LoopedGated`]: a block of self pairs between two frames with more groups than this
/// is split into sub-blocks under a gate.
pub const LOOPED_SPLIT_GROUPS: usize = 16;
/// The f32 bits of the padding rows' radii (a quiet NaN).
const LOOPED_PAD_BITS: u32 = 0x7fc0_0000;

/// Which of the looped layouts [`emit_looped`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LoopOrder {
    /// [`Layout::Looped`].
    Plain,
    /// [`Layout::LoopedGated`].
    Gated,
    /// [`Layout::Streamed`].
    Streamed,
}

/// A culling bound: centre in its frame and padded radius (see [`Cull`]).
type Bound = (V3, f32);

/// A node of the looped layout's obstacle culling tables: a bound (slot and padded radius, see
/// [`Cull`]) or none, over a range of the next level's entries.
struct LoopNode {
    bound: Option<(usize, f32)>,
    lo: usize,
    hi: usize,
}

/// A group of at most [`LOOPED_PAIR_GROUP`] self pairs of the looped layout between one body
/// `a` and others (`(pair, other body)`), under a test of `a` against a bound of the others
/// (slot, radius `r_a + R + margin`) or none.
struct LoopGroup {
    a: usize,
    bound: Option<(usize, f32)>,
    pairs: Vec<(usize, usize)>,
}

/// A block of groups of self pairs of the looped layout, under a test of two bounds (slots,
/// radius sum with the margin) or none. `skip`: the block the loop goes on at when the bound
/// test fails (a gate of [`Layout::LoopedGated`]: the block after its sub-blocks), `None` for
/// the next one.
struct LoopBlock {
    bound: Option<(usize, usize, f32)>,
    groups: Vec<LoopGroup>,
    skip: Option<usize>,
}

/// `bodies` (one frame's) in runs of at most `per` neighbours along the longest side of their
/// box (as [`Cull::new`] splits).
fn neighbour_runs(m: &CollisionModel, bodies: &[usize], per: usize) -> Vec<Vec<usize>> {
    let (_, _, lo, hi) = bound_of(m, bodies);
    let axis = (0..3)
        .max_by(|&a, &b| (hi[a] - lo[a]).total_cmp(&(hi[b] - lo[b])))
        .unwrap_or(0);
    let mut sorted = bodies.to_vec();
    sorted.sort_by(|&a, &b| {
        m.bodies[a].center[axis]
            .total_cmp(&m.bodies[b].center[axis])
            .then(a.cmp(&b))
    });
    sorted.chunks(per.max(1)).map(<[usize]>::to_vec).collect()
}

/// Every body under a culling node.
fn cull_bodies(t: &Cull, out: &mut Vec<usize>) {
    out.extend(&t.bodies);
    for p in &t.parts {
        cull_bodies(p, out);
    }
}

/// The first tests under top culling node `t` of the looped layout, (slot, radius): its bound,
/// or where it has none, its parts' bounds, or where a part has none, its bodies. Every other
/// test of an obstacle under `t` comes after one of them fired.
fn first_tests(
    m: &CollisionModel,
    t: &LoopNode,
    parts: &[LoopNode],
    env_bodies: &[usize],
) -> Vec<(usize, f32)> {
    if let Some(b) = t.bound {
        return vec![b];
    }
    let mut tests = Vec::new();
    for part in &parts[t.lo..t.hi] {
        match part.bound {
            Some(b) => tests.push(b),
            None => tests.extend(
                env_bodies[part.lo..part.hi]
                    .iter()
                    .map(|&bi| (bi, m.bodies[bi].radius)),
            ),
        }
    }
    tests
}

/// The slots of the looped layout: slot `i < bodies` is body `i`'s world centre, then the
/// culling-bound centres (deduplicated by frame and centre).
struct LoopSlots {
    bodies: usize,
    bounds: Vec<(i32, V3)>,
}

impl LoopSlots {
    fn bound(&mut self, frame: i32, c: V3) -> usize {
        let bits = |v: &V3| v.map(f32::to_bits);
        let i = match self
            .bounds
            .iter()
            .position(|(f, x)| *f == frame && bits(x) == bits(&c))
        {
            Some(i) => i,
            None => {
                self.bounds.push((frame, c));
                self.bounds.len() - 1
            }
        };
        self.bodies + i
    }

    fn count(&self) -> usize {
        self.bodies + self.bounds.len()
    }
}

/// Appends `pairs` (`(other body, own body, pair)`, sorted by the other body) to `blocks` as
/// groups without a bound, each of at most [`LOOPED_PAIR_GROUP`] pairs with one other body.
/// The groups join the last block when it has no bound and its index is at least `from` (the
/// first block of the frame group being built, so that a block never holds pairs of two frame
/// groups: [`Layout::Streamed`] runs a frame group's blocks right after its frame).
fn add_unbounded(blocks: &mut Vec<LoopBlock>, pairs: &[(usize, usize, usize)], from: usize) {
    let mut groups: Vec<LoopGroup> = Vec::new();
    for &(other, own, pi) in pairs {
        match groups.last_mut() {
            Some(g) if g.a == other && g.pairs.len() < LOOPED_PAIR_GROUP => g.pairs.push((pi, own)),
            _ => groups.push(LoopGroup {
                a: other,
                bound: None,
                pairs: vec![(pi, own)],
            }),
        }
    }
    if groups.is_empty() {
        return;
    }
    let len = blocks.len();
    match blocks.last_mut() {
        Some(last) if last.bound.is_none() && len > from => last.groups.extend(groups),
        _ => blocks.push(LoopBlock {
            bound: None,
            groups,
            skip: None,
        }),
    }
}

/// The [`Layout::Looped`] translation unit's `gmp_spec_valid` and its tables.
///
/// 1. Forward kinematics unrolled (the same code as [`Layout::Inline`]); after each frame, the
///    world centre (and, for motions, the sweep) of every body and culling bound on it, written
///    once to a per-thread slot array.
/// 2. For each obstacle (its kind dispatched once), a loop over the culling tables: the bound of
///    each frame's bodies (the [`Cull`] tree of the inline layout, at most two levels), its
///    parts, then the bodies; a body whose bounding test fires is a collision (point bodies
///    against a primitive) or needs the out-of-line covering and exact tests.
/// 3. A loop over the self-pair blocks: the sphere pairs between two frames under one test of
///    two bounds (as the inline layout), then groups of [`LOOPED_PAIR_GROUP`] pairs between one
///    body of the earlier frame and neighbouring bodies of the later one, each group under a
///    test of that body against the neighbours' bound; the pairs of a group are tested side by
///    side.
///
/// Every test is the expression of the CPU (`frames_valid`) on the same values, as in the
/// other layouts; the tables hold the robot's constants exactly (hexadecimal literals, or f32
/// bits), sums of constants computed in f32 in the CPU's order (`(ra + rb) + margin`, and for
/// configurations, where the CPU adds two zero sweeps, its square; with sweeps, `+ ea + eb` in
/// the pair's order). Without a sweep a radius is used as is: the CPU's `r + 0.0` equals `r` but
/// for `r = -0.0`, and every test squares the sum it makes of it. A sphere pair's distance test
/// does not depend on the sign of `d`; the out-of-line pair test gets the CPU's `d`. The loops
/// change which tests run and in which order, not a verdict (see the module documentation: a
/// configuration is free when every test says so), and the culling bounds are the padded
/// bounds of [`Cull`] (the group bounds: a body's own sphere against a padded bound of the
/// others, the same triangle inequality).
///
/// Where every test is a sphere test (no frames stored), the swept code also has a three-way
/// build (`TRI`, used by `gmp_spec_step_status`): a swept test that fires is made again without
/// the sweep, so that one pass tells a collision (1) from a step free only without the sweep
/// (2) instead of a second whole pass. Every test the unswept pass would fire on is reached:
/// a smaller reach fires only where the larger does, and the culling bounds and the proximity
/// filter grow with the sweep. Returns whether the f16 pass and the three-way build were
/// emitted.
///
/// `order` [`LoopOrder::Gated`] adds the side-by-side masks of [`Layout::LoopedGated`];
/// [`LoopOrder::Streamed`] runs step 2 and 3 per frame group, right after its centres are
/// stored (the obstacle loop over the group's culling node, the blocks of the pairs whose later
/// body is in the group; such a block never holds pairs of another group).
#[allow(clippy::too_many_arguments)]
fn emit_looped(
    o: &mut Out,
    gen: &Gen,
    groups: &[Vec<usize>],
    pairs_of: &[Vec<usize>],
    order: LoopOrder,
    compact: bool,
    half: bool,
    stats: &mut SpecialiseStats,
    prox_reach: &mut Option<f64>,
) -> Result<(bool, bool), SpecialiseError> {
    let gated = order == LoopOrder::Gated;
    let streamed = order == LoopOrder::Streamed;
    let m = gen.m;
    let nb = m.bodies.len();
    let nf = m.frames.len();
    let mg = gen.mg.as_str();
    let mut slots = LoopSlots {
        bodies: nb,
        bounds: Vec::new(),
    };

    // Obstacle culling: per frame group, its Cull tree (two levels at most, see Cull::new).
    let (mut tops, mut parts, mut env_bodies) = (Vec::new(), Vec::new(), Vec::<usize>::new());
    // Per frame group: its top culling node (groups with bodies have one).
    let mut top_of_group: Vec<Option<usize>> = vec![None; groups.len()];
    for (g, bodies) in groups.iter().enumerate().filter(|(_, b)| !b.is_empty()) {
        top_of_group[g] = Some(tops.len());
        let frame = m.bodies[bodies[0]].frame;
        let tree = Cull::new(m, bodies);
        let lo = parts.len();
        let mut leaves: Vec<(Option<Bound>, Vec<usize>)> = Vec::new();
        if !tree.bodies.is_empty() {
            leaves.push((None, tree.bodies.clone()));
        }
        for p in &tree.parts {
            let mut under = Vec::new();
            cull_bodies(p, &mut under);
            leaves.push((p.bound, under));
        }
        for (bound, under) in leaves {
            let bound = bound.map(|(c, r)| (slots.bound(frame, c), r));
            parts.push(LoopNode {
                bound,
                lo: env_bodies.len(),
                hi: env_bodies.len() + under.len(),
            });
            env_bodies.extend(under);
        }
        let bound = tree.bound.map(|(c, r)| (slots.bound(frame, c), r));
        tops.push(LoopNode {
            bound,
            lo,
            hi: parts.len(),
        });
    }
    stats.cull_bounds = tops
        .iter()
        .chain(&parts)
        .filter(|n| n.bound.is_some())
        .count();
    // The tests each obstacle starts with: every top node's bound, or where a node has none,
    // its parts' bounds, or where a part has none, its bodies. Every other test of the obstacle
    // loop sits under one of them, so an obstacle none of them reaches needs no test at all.
    // (slot, radius of the test)
    let covers: Vec<(usize, f32)> = tops
        .iter()
        .flat_map(|t| first_tests(m, t, &parts, &env_bodies))
        .collect();

    // Self pairs: per frame group, the pairs whose later body it holds, by the other body's
    // frame (as emit_group).
    let plain = |pi: usize| {
        let [a, b] = m.self_pairs[pi];
        is_plain_sphere(m, &m.bodies[a as usize]) && is_plain_sphere(m, &m.bodies[b as usize])
    };
    let mut blocks: Vec<LoopBlock> = Vec::new();
    // Per frame group: the blocks of the pairs whose later body it holds, [lo, hi).
    let mut blocks_of_group: Vec<(usize, usize)> = vec![(0, 0); groups.len()];
    for (g, pairs) in pairs_of.iter().enumerate() {
        let bodies = &groups[g];
        // Looped and gated: a block without a bound may take the next group's unbounded pairs.
        let block_lo = if streamed { blocks.len() } else { 0 };
        blocks_of_group[g].0 = blocks.len();
        let mut order: Vec<(i32, usize, usize, usize)> = Vec::new();
        for &pi in pairs {
            let [a, b] = m.self_pairs[pi];
            if covering(m, &m.bodies[a as usize])?.is_empty()
                || covering(m, &m.bodies[b as usize])?.is_empty()
            {
                // The CPU's covering loop finds nothing near: never a collision.
                stats.skipped_pairs += 1;
                continue;
            }
            if plain(pi) {
                stats.sphere_pairs += 1;
            } else {
                stats.fine_pairs += 1;
            }
            let (own, other) = if bodies.contains(&(a as usize)) {
                (a, b)
            } else {
                (b, a)
            };
            let other = other as usize;
            order.push((m.bodies[other].frame, other, own as usize, pi));
        }
        order.sort_unstable();
        let mut k = 0;
        while k < order.len() {
            let FrameBlock {
                frame,
                rows: block,
                culled,
                rest,
                own,
                other,
            } = frame_block(&order, k, |p| plain(p.3));
            k += block.len();
            if own.is_empty() || culled.len() < PAIR_CULL_MIN {
                let all: Vec<_> = block.iter().map(|p| (p.1, p.2, p.3)).collect();
                add_unbounded(&mut blocks, &all, block_lo);
                continue;
            }
            let own_frame = m.bodies[own[0]].frame;
            let (cp, rp, _, _) = bound_of(m, &own);
            let (cq, rq, _, _) = bound_of(m, &other);
            let pa = slots.bound(own_frame, cp);
            let pb = slots.bound(frame, cq);
            stats.cull_pair_bounds += 1;
            // This group's bodies in runs of neighbours, each run under its own bound, tested
            // against each body of the other frame.
            let runs: Vec<(usize, f32, Vec<usize>)> = neighbour_runs(m, &own, LOOPED_PAIR_GROUP)
                .into_iter()
                .map(|run| {
                    let (c, r, _, _) = bound_of(m, &run);
                    (slots.bound(own_frame, c), r, run)
                })
                .collect();
            // The group of body `ob` (the other frame's) against one run of this group's bodies.
            let group_of = |ob: usize, (cs, cr, run): &(usize, f32, Vec<usize>)| {
                let pairs: Vec<(usize, usize)> = culled
                    .iter()
                    .filter(|p| p.1 == ob && run.contains(&p.2))
                    .map(|p| (p.3, p.2))
                    .collect();
                (!pairs.is_empty()).then(|| LoopGroup {
                    a: ob,
                    bound: Some((*cs, m.bodies[ob].radius + *cr + m.margin)),
                    pairs,
                })
            };
            let block_groups: Vec<LoopGroup> = other
                .iter()
                .flat_map(|&ob| runs.iter().filter_map(move |run| group_of(ob, run)))
                .collect();
            let gate = LoopBlock {
                bound: Some((pa, pb, rp + rq + m.margin)),
                groups: Vec::new(),
                skip: None,
            };
            // Gated: a gate (the two frames' bounds, no groups) and a sub-block per pair of runs
            // (this group's run, the other frame's run: each under its padded bound, the same
            // triangle inequality as the block's bound). A gate that does not fire skips its
            // sub-blocks: no pair of the two frames can be within reach. At most 64 sub-blocks
            // (one bit each in the mask of a fired gate).
            // Sub-blocks: (this group's run slot, the other run's centre, radius sum, groups).
            let mut subs: Vec<(usize, V3, f32, Vec<LoopGroup>)> = Vec::new();
            if gated && block_groups.len() > LOOPED_SPLIT_GROUPS {
                for orun in neighbour_runs(m, &other, LOOPED_PAIR_GROUP) {
                    let (co, ro, _, _) = bound_of(m, &orun);
                    for run in &runs {
                        let groups: Vec<LoopGroup> =
                            orun.iter().filter_map(|&ob| group_of(ob, run)).collect();
                        if !groups.is_empty() {
                            subs.push((run.0, co, run.1 + ro + m.margin, groups));
                        }
                    }
                }
            }
            if !subs.is_empty() && subs.len() <= 64 {
                let gate_at = blocks.len();
                blocks.push(gate);
                for (own_slot, co, r, groups) in subs {
                    let so = slots.bound(frame, co);
                    stats.cull_pair_bounds += 1;
                    blocks.push(LoopBlock {
                        bound: Some((own_slot, so, r)),
                        groups,
                        skip: None,
                    });
                }
                blocks[gate_at].skip = Some(blocks.len());
            } else {
                blocks.push(LoopBlock {
                    groups: block_groups,
                    ..gate
                });
            }
            let rest: Vec<_> = rest.iter().map(|p| (p.1, p.2, p.3)).collect();
            add_unbounded(&mut blocks, &rest, block_lo);
        }
        blocks_of_group[g].1 = blocks.len();
    }
    let ns = slots.count();
    if gated && tops.len() > 64 {
        return Err(SpecialiseError::TooLarge {
            what: format!(
                "{} culling nodes (one bit each in a 64-bit mask)",
                tops.len()
            ),
            limit: 64,
        });
    }
    if ns > MAX_LOOPED_SLOTS {
        return Err(SpecialiseError::TooLarge {
            what: format!("{ns} slots (bodies and culling bounds)"),
            limit: MAX_LOOPED_SLOTS,
        });
    }

    // The tables: blocks over groups, each group LOOPED_PAIR_GROUP pair rows (padded).
    let lit = |x: f32, what: &str| Lit::f(x, || what.to_string());
    let mut pair_rows: Vec<String> = Vec::new();
    let mut group_rows: Vec<String> = Vec::new();
    let mut block_rows: Vec<String> = Vec::new();
    let mut any_fine_pair = false;
    // Gated: the ordinal of each top-level block (not a gate's sub-block), u32::MAX for
    // sub-blocks; the first 64 top-level blocks are tested side by side (gmp_lp_block_mask).
    let mut ords = Vec::with_capacity(blocks.len());
    let (mut sub_until, mut next_ord) = (0, 0u32);
    for (k, bl) in blocks.iter().enumerate() {
        if k < sub_until {
            ords.push(u32::MAX);
        } else {
            ords.push(next_ord);
            next_ord += 1;
            sub_until = bl.skip.unwrap_or(0);
        }
    }
    for bl in &blocks {
        let lo = group_rows.len();
        for gr in &bl.groups {
            let (pb, r) = match gr.bound {
                Some((s, r)) => (s as i64, lit(r, "pair group bound radius")?),
                None => (-1, "0x0p+0f".into()),
            };
            group_rows.push(format!("{{{}u, {pb}, {r}, {}u}},", gr.a, pair_rows.len()));
            for &(pi, own) in &gr.pairs {
                let [ia, ib] = m.self_pairs[pi];
                let (ba, bb) = (&m.bodies[ia as usize], &m.bodies[ib as usize]);
                let fine = !plain(pi);
                any_fine_pair |= fine;
                // The group's body is the pair's second: sweeps added, and `d` taken, in the
                // pair's order.
                let swapped = ia as usize == own;
                // The CPU's `ba.radius + bb.radius + margin` (then `+ ea + eb`), in f32.
                let rab = ba.radius + bb.radius + m.margin;
                let rr2 = rab * rab;
                if !rab.is_finite() || !rr2.is_finite() {
                    return Err(SpecialiseError::NonFinite {
                        what: format!("pair {pi} radius sum"),
                    });
                }
                pair_rows.push(format!(
                    "{{{}u, 0x{:08x}u, 0x{:08x}u}}, // pair {pi}: bodies {ia}, {ib}",
                    own as u32 | if fine { 1 << 31 } else { 0 } | if swapped { 1 << 30 } else { 0 },
                    rab.to_bits(),
                    rr2.to_bits()
                ));
            }
            for _ in gr.pairs.len()..LOOPED_PAIR_GROUP {
                pair_rows.push(format!(
                    "{{{}u, 0x{LOOPED_PAD_BITS:08x}u, 0x{LOOPED_PAD_BITS:08x}u}}, // padding",
                    gr.a
                ));
            }
        }
        let (pa, pb, r) = match bl.bound {
            Some((pa, pb, r)) => (pa as i64, pb as i64, lit(r, "pair bound radius")?),
            None => (-1, -1, "0x0p+0f".into()),
        };
        let skip = if gated {
            format!(
                ", {}u, {}u",
                bl.skip.unwrap_or(block_rows.len() + 1),
                ords[block_rows.len()]
            )
        } else {
            String::new()
        };
        block_rows.push(format!(
            "{{{pa}, {pb}, {r}, {lo}u, {}u{skip}}},",
            group_rows.len()
        ));
    }
    let node_row = |n: &LoopNode| -> Result<String, SpecialiseError> {
        let (slot, r) = match n.bound {
            Some((s, r)) => (s as i64, lit(r, "culling bound radius")?),
            None => (-1, "0x0p+0f".into()),
        };
        Ok(format!("{{{slot}, {r}, {}u, {}u}},", n.lo, n.hi))
    };
    let top_rows = tops.iter().map(node_row).collect::<Result<Vec<_>, _>>()?;
    let part_rows = parts.iter().map(node_row).collect::<Result<Vec<_>, _>>()?;
    let mut body_rows = Vec::new();
    for &bi in &env_bodies {
        let b = &m.bodies[bi];
        // Sphere bodies without a covering test: the bounding test against a primitive is exact.
        let point = b.vert_count == 1 && !env_covering(b);
        body_rows.push(format!(
            "{{{}u, {}}}, // body {bi}",
            bi as u32 | if point { 1 << 31 } else { 0 },
            Lit::f(b.radius, || format!("body {bi} radius"))?
        ));
    }
    // The out-of-line tests (covering spheres, GJK). Where they may run often (bodies that are
    // not single spheres, pairs that are not sphere pairs: polytope models) the frames are
    // stored and the tests called from the loops. Otherwise (sphere models, where they run
    // only for a sphere near a mesh obstacle's bounding sphere) a configuration that needs one
    // is handed whole to the table-driven twin (`gmp_fk` + `gmp_frames_valid`, the generic
    // kernel's code): no call in the loops.
    let store_frames = any_fine_pair
        || m.bodies
            .iter()
            .any(|b| b.vert_count != 1 || env_covering(b));
    // The f16-slot pass only where every test is a sphere test (no out-of-line test to resume).
    // Its shrunk tests need a reach that stays >= 0 when the radius does: a margin >= 0.
    let half = half && compact && !store_frames && order == LoopOrder::Plain && m.margin >= 0.0;
    // The undecided flag of the f16 pass, in the signatures and calls that carry it.
    // The three-way motion-step test (TRI, gmp_spec_step_status): where every test is a sphere
    // test, the swept pass also tests again without the sweep where a test fires, so that one
    // pass tells a collision from an uncertain step. (Every f16 build is one of these.)
    let tri = !store_frames;
    // How the code hands a configuration to the table-driven twin (an out-of-line test, or
    // outside the folded code's range).
    let to_twin: &[&str] = if tri {
        &[
            "if (TRI) return gmp_lp_twin_tri(m, q, diff, n, undp);",
            "return gmp_lp_twin<SWEEP>(m, q, diff, n);",
        ]
    } else {
        &["return gmp_lp_twin<SWEEP>(m, q, diff, n);"]
    };
    let (und_param, und_arg) = if half {
        (", bool& und, float eh", ", und, eh")
    } else if tri {
        (", bool& und", ", und")
    } else {
        ("", "")
    };
    // The growth of a grown test at slot s: the f16 pass's configuration-wide bound (gmp_lp_eg).
    let eg_s = if half {
        "gmp_lp_eg(s, eh)"
    } else {
        "gmp_lp_e(s)"
    };
    // A pair bound's reach r grown at slots a and b (gmp_lp_grow2).
    let grow_ab = |r: &str| {
        if half {
            format!("gmp_lp_grow2({r}, a, b, eh2)")
        } else {
            format!("{r} + gmp_lp_e(a) + gmp_lp_e(b)")
        }
    };
    let table_bytes = 16 * (tops.len() + parts.len())
        + 8 * body_rows.len()
        + if gated { 28 } else { 20 } * block_rows.len()
        + 16 * group_rows.len()
        + 12 * pair_rows.len();
    stats.slots = ns;
    stats.table_bytes = table_bytes;

    o.line(format!(
        "// Looped layout: {ns} slots per thread ({nb} bodies, {} culling bounds), {} culling \
         nodes, {} pair blocks, {} pair groups, {} pair rows; tables {table_bytes} bytes{}.",
        slots.bounds.len(),
        tops.len() + parts.len(),
        block_rows.len(),
        group_rows.len(),
        pair_rows.len(),
        if store_frames { "; frames stored" } else { "" }
    ));
    o.line(format!("#ifndef {REGISTER_CAP_MACRO}"));
    o.line(format!(
        "#define GMP_CONFIGS_BOUNDS __launch_bounds__({}, {LOOPED_CONFIG_BLOCKS})",
        super::BLOCK
    ));
    o.line(format!(
        "#define GMP_MOTIONS_BOUNDS __launch_bounds__({}, {LOOPED_MOTION_BLOCKS})",
        super::BLOCK
    ));
    o.line("#endif");
    o.line(format!(
        "#define GMP_LP_TABLE {}",
        if table_bytes <= LOOPED_CONSTANT_BYTES {
            "__constant__"
        } else {
            "__device__"
        }
    ));
    o.line("struct alignas(16) GmpLpSlot { float x, y, z, e; };");
    o.line("template <bool SWEEP, bool HALF> struct GmpLpSlotOf { typedef GmpLpSlot T; };");
    if compact {
        o.line("// The configuration kernel's slot: no sweep (its growth is a constant zero, as the CPU's sweep there).");
        o.line("struct GmpLpSlot3 { float x, y, z; };");
        o.line("template <> struct GmpLpSlotOf<false, false> { typedef GmpLpSlot3 T; };");
    }
    if half {
        o.line("// The f16-slot pass of the configuration kernel (Layout::LoopedHalf): a world centre rounded");
        o.line("// to f16; its growth is a bound on that rounding (gmp_lp_e).");
        o.line("struct GmpLpSlotH { unsigned short x, y, z; };");
        o.line("template <> struct GmpLpSlotOf<false, true> { typedef GmpLpSlotH T; };");
    }
    o.line("// A culling node: bound slot (-1: none) and padded radius, over entries [lo, hi) of the next table.");
    o.line("struct GmpLpNode { int slot; float r; unsigned lo, hi; };");
    o.line(
        "// A body against the obstacles: w = body index (= its slot) | 1 << 31 for point bodies.",
    );
    o.line("struct GmpLpBody { unsigned w; float r; };");
    if gated {
        o.line("// A pair block: bound slots (-1: none), (rp + rq) + margin, pair groups [lo, hi), the block");
        o.line("// to go on at when the bound test fails (a gate: the block after its sub-blocks), the ordinal");
        o.line("// of a top-level block (its bit in gmp_lp_block_mask; 0xffffffff: a gate's sub-block).");
        o.line("struct GmpLpBlock { int pa, pb; float r; unsigned lo, hi, skip, ord; };");
    } else {
        o.line(
            "// A pair block: bound slots (-1: none), (rp + rq) + margin, pair groups [lo, hi).",
        );
        o.line("struct GmpLpBlock { int pa, pb; float r; unsigned lo, hi; };");
    }
    o.line(format!(
        "// A pair group: body a, the bound slot of the others (-1: none), (ra + R) + margin, pair rows [row, row + {LOOPED_PAIR_GROUP})."
    ));
    o.line("struct GmpLpGroup { unsigned a; int pb; float r; unsigned row; };");
    o.line("// A pair of a and body b: w = b | 1 << 31 when the pair has out-of-line tests | 1 << 30 when b is");
    o.line("// the pair's first body; the f32 bits of rab = (ra + rb) + margin and rr2 = rab * rab (the CPU's order);");
    o.line("// padding rows: NaN (no comparison passes).");
    o.line("struct GmpLpPair { unsigned w, rab, rr2; };");
    let table = |o: &mut Out, ty: &str, name: &str, rows: &[String], dummy: &str| {
        o.open(format!(
            "static GMP_LP_TABLE const {ty} {name}[{}] = {{",
            rows.len().max(1)
        ));
        if rows.is_empty() {
            o.line(dummy);
        }
        for r in rows {
            o.line(r);
        }
        o.close("};");
    };
    table(
        o,
        "GmpLpNode",
        "gmp_lp_top",
        &top_rows,
        "{-1, 0.0f, 0u, 0u},",
    );
    table(
        o,
        "GmpLpNode",
        "gmp_lp_part",
        &part_rows,
        "{-1, 0.0f, 0u, 0u},",
    );
    table(o, "GmpLpBody", "gmp_lp_body", &body_rows, "{0u, 0.0f},");
    table(
        o,
        "GmpLpBlock",
        "gmp_lp_block",
        &block_rows,
        if gated {
            "{-1, -1, 0.0f, 0u, 0u, 1u, 0u},"
        } else {
            "{-1, -1, 0.0f, 0u, 0u},"
        },
    );
    table(
        o,
        "GmpLpGroup",
        "gmp_lp_group",
        &group_rows,
        "{0u, -1, 0.0f, 0u},",
    );
    table(o, "GmpLpPair", "gmp_lp_pair", &pair_rows, "{0u, 0u, 0u},");
    o.line("");
    o.line("__device__ __forceinline__ float gmp_lp_f32(unsigned bits) {");
    o.line("#ifdef __CUDACC__");
    o.line("    return __uint_as_float(bits);");
    o.line("#else");
    o.line("    float f;");
    o.line("    memcpy(&f, &bits, 4);");
    o.line("    return f;");
    o.line("#endif");
    o.line("}");
    o.line("");
    o.line("__device__ __forceinline__ void gmp_lp_put(GmpLpSlot* S, unsigned s, const V3& c, float e, bool&, float&) {");
    o.line("    GmpLpSlot v;");
    o.line("    v.x = c.x[0];");
    o.line("    v.y = c.x[1];");
    o.line("    v.z = c.x[2];");
    o.line("    v.e = e;");
    o.line("    S[s] = v;");
    o.line("}");
    if compact {
        o.line("");
        o.line("__device__ __forceinline__ void gmp_lp_put(GmpLpSlot3* S, unsigned s, const V3& c, float, bool&, float&) {");
        o.line("    GmpLpSlot3 v;");
        o.line("    v.x = c.x[0];");
        o.line("    v.y = c.x[1];");
        o.line("    v.z = c.x[2];");
        o.line("    S[s] = v;");
        o.line("}");
        o.line("");
        o.line(
            "__device__ __forceinline__ V3 gmp_lp_c(const GmpLpSlot3& s) { return v3(s.x, s.y, s.z); }",
        );
    }
    o.line("");
    o.line(
        "__device__ __forceinline__ V3 gmp_lp_c(const GmpLpSlot& s) { return v3(s.x, s.y, s.z); }",
    );
    o.line("__device__ __forceinline__ float gmp_lp_e(const GmpLpSlot& s) { return s.e; }");
    if compact {
        o.line("__device__ __forceinline__ float gmp_lp_e(const GmpLpSlot3&) { return 0.0f; }");
    }
    if half {
        o.line("// The exact slots' growths as before (gmp_lp_eg, gmp_lp_grow2: the f16 pass's, emit_half_slot).");
        o.line(
            "__device__ __forceinline__ float gmp_lp_eg(const GmpLpSlot& s, float) { return s.e; }",
        );
        o.line(
            "__device__ __forceinline__ float gmp_lp_eg(const GmpLpSlot3&, float) { return 0.0f; }",
        );
        o.line("template <typename T>");
        o.line("__device__ __forceinline__ float gmp_lp_grow2(float r, const T& a, const T& b, float) {");
        o.line("    return r + gmp_lp_e(a) + gmp_lp_e(b);");
        o.line("}");
    }
    if half {
        emit_half_slot(o);
    }
    o.line("");
    if store_frames {
        o.line("__device__ __noinline__ bool gmp_lp_env_fine(const GmpModel& m, const Xf* fr, unsigned bi, unsigned oi, V3 c,");
        o.line("                                             float e) {");
        o.line("    return gmp_body_obstacle_clear_at(m, gmp_frame_of(fr, m.bodies[bi].frame), bi, oi, c, e);");
        o.line("}");
        o.line("");
        o.line("__device__ __noinline__ bool gmp_lp_pair_fine(const GmpModel& m, const Xf* fr, unsigned ia, unsigned ib, float ea,");
        o.line("                                              float eb, V3 d) {");
        o.line("    return gmp_pair_clear_at(m, gmp_frame_of(fr, m.bodies[ia].frame), gmp_frame_of(fr, m.bodies[ib].frame), ia, ib,");
        o.line("                             ea, eb, d);");
        o.line("}");
    }
    if !store_frames || gen.fold {
        o.line("");
        o.line("// The whole configuration through the table-driven twin (the generic kernel's code, the CPU's");
        o.line("// arithmetic), for the rare configuration that needs an out-of-line test (or, folded, one");
        o.line("// outside the range the folding is shown exact for).");
        o.line("template <bool SWEEP>");
        o.line("__device__ __noinline__ bool gmp_lp_twin(const GmpModel& m, const float* q, const float* diff, unsigned n) {");
        o.line("    Xf frs[GMP_MAX_FRAMES];");
        o.line("    gmp_fk(m, q, frs);");
        o.line("    return gmp_frames_valid(m, frs, SWEEP ? diff : nullptr, n);");
        o.line("}");
        if tri {
            o.line("");
            o.line("// The twin's three-way status (gmp_motion_step_status) as gmp_spec_valid<true, false, true>");
            o.line("// returns it: true = free with the sweep; false, *undp set = free only without it.");
            o.line("__device__ __noinline__ bool gmp_lp_twin_tri(const GmpModel& m, const float* q, const float* diff, unsigned n,");
            o.line("                                             bool* undp) {");
            o.line("    const unsigned st = gmp_motion_step_status(m, q, diff, n);");
            o.line("    if (st == 2u) *undp = true;");
            o.line("    return st == 0u;");
            o.line("}");
        }
    }
    o.line("");
    o.line("// The bounding test of kind K (GMP_SPHERE stands for spheres and meshes).");
    if gen.fold {
        o.line(
            "// Folded: GMP_LP_BOX_Z and GMP_LP_CYLINDER_Z are boxes and cylinders rotated about z",
        );
        o.line("// (gmp_obstacle_zrot), tested without the products with their rotation's zeros.");
        o.line("#define GMP_LP_BOX_Z 16u");
        o.line("#define GMP_LP_CYLINDER_Z 18u");
    }
    o.line("template <unsigned K>");
    o.open(
        "__device__ __forceinline__ bool gmp_lp_near(const V3& c, float r, const GmpObstacle& o) {",
    );
    if gen.fold {
        o.line(format!(
            "if (K == GMP_LP_BOX_Z) return gmp_near_box_z(c, r, o, {mg});"
        ));
        o.line(format!(
            "if (K == GMP_LP_CYLINDER_Z) return gmp_near_cylinder_z(c, r, o, {mg});"
        ));
    }
    o.line(format!(
        "if (K == GMP_BOX) return gmp_near_box(c, r, o, {mg});"
    ));
    o.line(format!(
        "if (K == GMP_CYLINDER) return gmp_near_cylinder(c, r, o, {mg});"
    ));
    o.line(format!("return gmp_near_ball(c, r, o, {mg});"));
    o.close("}");
    o.line("");
    if gated {
        o.line("// The top nodes' bound tests against obstacle o, side by side (bit t: node t's bound fires; for");
        o.line("// a node without a bound, the tests of the parts and bodies under it, one of which fires): the");
        o.line("// tests the loop below makes first, with constant slots and radii, so that their loads are in");
        o.line("// flight together rather than one after the other. A node whose bit is clear has nothing under");
        o.line("// it that the loop would find near o.");
        o.line("template <unsigned K, bool SWEEP, bool HALF>");
        o.open("__device__ __forceinline__ unsigned long long gmp_lp_top_mask(const typename GmpLpSlotOf<SWEEP, HALF>::T* S, const GmpObstacle& o) {");
        o.line("unsigned long long mask = 0ull;");
        for (t, n) in tops.iter().enumerate() {
            for (slot, r) in first_tests(m, n, &parts, &env_bodies) {
                let r = lit(r, "culling radius")?;
                o.open("{");
                o.line(format!("const auto s = S[{slot}];"));
                o.line(format!(
                    "if (gmp_lp_near<K>(gmp_lp_c(s), (SWEEP || HALF) ? {r} + gmp_lp_e(s) : {r}, o)) mask |= 1ull << {t};"
                ));
                o.close("}");
            }
        }
        o.line("return mask;");
        o.close("}");
        o.line("");
    }
    o.line("// Every body against obstacle o (of kind K) through the culling tables, from top node t, part p,");
    o.line("// body entry k (resume: go on at k, the bounds above it having fired). 0: no collision; 1: a");
    o.line("// collision; 2: body entry k needs the out-of-line tests (the caller runs them out of the loops,");
    o.line("// so that no call keeps the loops' state live, then resumes at k + 1).");
    if half {
        o.line("// The f16 pass (HALF) sets und for a body whose grown test fires and shrunk test does not, and");
        o.line("// goes on.");
    }
    o.line("template <unsigned K, bool SWEEP, bool HALF, bool TRI>");
    if gated {
        o.open("__device__ __forceinline__ unsigned gmp_lp_env(const typename GmpLpSlotOf<SWEEP, HALF>::T* S, const GmpObstacle& o, unsigned long long mask,");
        o.line(format!("                                              unsigned& t, unsigned& p, unsigned& k, bool resume{und_param}) {{"));
    } else if streamed {
        o.open("__device__ __forceinline__ unsigned gmp_lp_env(const typename GmpLpSlotOf<SWEEP, HALF>::T* S, const GmpObstacle& o, unsigned t_end,");
        o.line(format!("                                              unsigned& t, unsigned& p, unsigned& k, bool resume{und_param}) {{"));
    } else {
        o.open("__device__ __forceinline__ unsigned gmp_lp_env(const typename GmpLpSlotOf<SWEEP, HALF>::T* S, const GmpObstacle& o, unsigned& t, unsigned& p,");
        o.line(format!(
            "                                              unsigned& k, bool resume{und_param}) {{"
        ));
    }
    o.line("#pragma unroll 1");
    if streamed {
        o.open("for (; t < t_end; t++) {");
    } else {
        o.open(format!("for (; t < {}u; t++) {{", tops.len()));
    }
    if gated {
        o.line("// The node a resumed test is under has its bit set.");
        o.line("if (((mask >> t) & 1ull) == 0ull) continue;");
        o.line("const GmpLpNode top = gmp_lp_top[t];");
        o.line("if (!resume) p = top.lo;");
    } else {
        o.line("const GmpLpNode top = gmp_lp_top[t];");
        o.open("if (!resume) {");
        o.open("if (top.slot >= 0) {");
        o.line("const auto s = S[top.slot];");
        o.line(format!("if (!gmp_lp_near<K>(gmp_lp_c(s), (SWEEP || HALF) ? top.r + {eg_s} : top.r, o)) continue;"));
        o.close("}");
        o.line("p = top.lo;");
        o.close("}");
    }
    o.line("#pragma unroll 1");
    o.open("for (; p < top.hi; p++) {");
    o.line("const GmpLpNode part = gmp_lp_part[p];");
    o.open("if (!resume) {");
    o.open("if (part.slot >= 0) {");
    o.line("const auto s = S[part.slot];");
    o.line(format!("if (!gmp_lp_near<K>(gmp_lp_c(s), (SWEEP || HALF) ? part.r + {eg_s} : part.r, o)) continue;"));
    o.close("}");
    o.line("k = part.lo;");
    o.close("}");
    o.line("resume = false;");
    o.line("#pragma unroll 1");
    o.open("for (; k < part.hi; k++) {");
    o.line("const GmpLpBody b = gmp_lp_body[k];");
    o.line("const auto s = S[b.w & 0x7fffffffu];");
    o.line("// The CPU's b.radius + e; without a sweep e = 0 (see emit_looped).");
    o.line(format!(
        "if (!gmp_lp_near<K>(gmp_lp_c(s), (SWEEP || HALF) ? b.r + {eg_s} : b.r, o)) continue;"
    ));
    if half {
        o.open("if (HALF) {");
        o.line("// The f16 pass, grown by the configuration's largest bound: the test grown by the centre's own.");
        o.line("if (!gmp_lp_near<K>(gmp_lp_c(s), b.r + gmp_lp_e(s), o)) continue;");
        o.open("if ((b.w >> 31) != 0u && o.kind != GMP_MESH) {");
        o.line("// The same test with the reach shrunk by the rounding bound fires only where the exact test");
        o.line("// does (see emit_half_slot); between the two, the exact code decides.");
        o.line("const float rs = b.r - gmp_lp_e(s);");
        o.line("if (rs >= 0.0f && gmp_lp_near<K>(gmp_lp_c(s), rs, o)) return 1u;");
        o.line("und = true;");
        o.line("continue;");
        o.close("}");
        o.close("}");
    }
    if tri {
        o.open("if (TRI && (b.w >> 31) != 0u && o.kind != GMP_MESH) {");
        o.line("// The three-way test: the same test without the sweep (the SWEEP = false code's) tells a");
        o.line("// collision from an uncertain step; an uncertain one goes on to the next body.");
        o.line("if (gmp_lp_near<K>(gmp_lp_c(s), b.r, o)) return 1u;");
        o.line("und = true;");
        o.line("continue;");
        o.close("}");
    }
    o.line("return (b.w >> 31) != 0u && o.kind != GMP_MESH ? 1u : 2u;");
    o.close("}");
    o.close("}");
    o.close("}");
    o.line("return 0u;");
    o.close("}");
    o.line("");

    // A block's bound test as the block loop makes it, with constant slots and radius, setting
    // bit `bit` of `mask` when it fires (or always, for a block without a bound).
    let block_bound_bit =
        |o: &mut Out, bl: &LoopBlock, bit: usize| -> Result<(), SpecialiseError> {
            let Some((pa, pb, r)) = bl.bound else {
                o.line(format!("mask |= 1ull << {bit};"));
                return Ok(());
            };
            let r = lit(r, "pair bound radius")?;
            o.open("{");
            o.line(format!("const auto a = S[{pa}];"));
            o.line(format!("const auto b = S[{pb}];"));
            o.line("const V3 d = gmp_sub(gmp_lp_c(a), gmp_lp_c(b));");
            o.line(format!(
                "const float rr = (SWEEP || HALF) ? {r} + gmp_lp_e(a) + gmp_lp_e(b) : {r};"
            ));
            o.line(format!(
                "if (gmp_dot(d, d) <= rr * rr) mask |= 1ull << {bit};"
            ));
            o.close("}");
            Ok(())
        };
    if gated {
        o.line("// The bound tests of gate k's sub-blocks (blocks k + 1 ..), side by side, the same tests as the");
        o.line("// block loop makes (bit j: block k + 1 + j's bound fires), with constant slots and radii.");
        o.line("template <bool SWEEP, bool HALF>");
        o.open("__device__ __forceinline__ unsigned long long gmp_lp_gate_mask(const typename GmpLpSlotOf<SWEEP, HALF>::T* S, unsigned k) {");
        o.line("unsigned long long mask = ~0ull;");
        o.open("switch (k) {");
        for (k, bl) in blocks.iter().enumerate() {
            let Some(end) = bl.skip else { continue };
            o.open(format!("case {k}u: {{"));
            o.line("mask = 0ull;");
            for (j, sb) in blocks[k + 1..end].iter().enumerate() {
                block_bound_bit(o, sb, j)?;
            }
            o.line("break;");
            o.close("}");
        }
        o.line("default:");
        o.line("    break;");
        o.close("}");
        o.line("return mask;");
        o.close("}");
        o.line("");
        o.line("// The bound tests of the first 64 top-level blocks side by side (bit ord: the block's bound");
        o.line("// fires, or it has none), the same tests as the block loop makes.");
        o.line("template <bool SWEEP, bool HALF>");
        o.open(
            "__device__ __forceinline__ unsigned long long gmp_lp_block_mask(const typename GmpLpSlotOf<SWEEP, HALF>::T* S) {",
        );
        o.line("unsigned long long mask = 0ull;");
        for (bl, &ord) in blocks.iter().zip(&ords).filter(|(_, &ord)| ord < 64) {
            block_bound_bit(o, bl, ord as usize)?;
        }
        o.line("return mask;");
        o.close("}");
        o.line("");
    }
    o.line("template <bool SWEEP, bool HALF = false, bool TRI = false>");
    if half {
        o.line("// HALF: the f16 pass; false with *undp set: undecided (the exact code decides), false with");
        o.line("// *undp untouched: in collision.");
    }
    if tri {
        o.line("// TRI (with SWEEP): the motion-step status in one pass (gmp_motion_step_status): true = free");
        o.line("// with the sweep (0), false with *undp set = free only without it (2), false with *undp");
        o.line("// untouched = in collision (1).");
    }
    let undp_param = if tri { ", bool* undp = nullptr" } else { "" };
    o.open(format!(
        "__device__ __noinline__ bool gmp_spec_valid(const GmpModel& m, const float* q, const float* diff, unsigned n{undp_param}) {{"
    ));
    // The proximity grid's lookups (plain order only: the gated and streamed orders split the
    // obstacle loop).
    let prox = order == LoopOrder::Plain
        && !covers.is_empty()
        && covers.iter().all(|(_, r)| r.is_finite())
        && m.margin.is_finite();
    let eh_max = lit(PROX_EH_MAX, "PROX_EH_MAX")?;
    if prox {
        let widest = covers
            .iter()
            .map(|&(_, r)| f64::from(r))
            .fold(0.0, f64::max);
        let eh = if half { f64::from(PROX_EH_MAX) } else { 0.0 };
        *prox_reach = Some(widest + eh + f64::from(m.margin.max(0.0)));
        stats.prox_covers = covers.len();
    }
    // Steps 2 and 3: the obstacle loop from top node t_lo to t_hi, the blocks [b_lo, b_hi).
    // Row j of group U: its pair P, the other body's slot b, the centres' difference d and dd.
    let emit_row = |o: &mut Out| {
        o.line("const GmpLpPair P = gmp_lp_pair[U.row + j];");
        o.line("const auto b = S[P.w & 0x3fffffffu];");
        o.line("const V3 d = gmp_sub(gmp_lp_c(a), gmp_lp_c(b));");
        o.line("const float dd = gmp_dot(d, d);");
    };
    // TRI, where a group's swept pair tests fired: the rows again without the sweep (opens an
    // `else {` that the caller closes after its own code for the other builds).
    let emit_tri_rows = |o: &mut Out| {
        if !tri {
            return;
        }
        o.open("if (TRI) {");
        o.line("// The three-way test: the rows again without the sweep (the SWEEP = false code's test); a");
        o.line("// row that fires is a collision, else the step is uncertain (a row that does not fire with");
        o.line("// the sweep does not without it; padding rows never fire).");
        o.line("#pragma unroll 1");
        o.open(format!(
            "for (unsigned j = 0; j < {LOOPED_PAIR_GROUP}u; j++) {{"
        ));
        emit_row(o);
        o.line("const float rr2 = gmp_lp_f32(P.rr2);");
        o.line("if ((P.w >> 31) != 0u ? !(dd > rr2) : dd <= rr2) return false;");
        o.close("}");
        o.line("und = true;");
        o.mid("} else {");
    };
    // Closes what emit_tri_rows opened.
    let close_tri_rows = |o: &mut Out| {
        if tri {
            o.close("}");
        }
    };
    let emit_tests = |o: &mut Out, (t_lo, t_hi): (usize, usize), (b_lo, b_hi): (usize, usize)| {
        if prox {
            o.line("// The obstacles within reach of some first test of the obstacle loop, from the scene's");
            o.line("// proximity grid (src/collision/prox.rs): an obstacle whose bit is clear is farther from");
            o.line("// every such bound than its test reaches, so none of its tests would fire. Every obstacle");
            o.line("// without a grid, in the f16 pass past a rounding bound of PROX_EH_MAX, and in the sweep");
            if half {
                o.line("// checks once a first test's growth exceeds PROX_EH_MAX (the grid's reach includes it).");
            } else {
                o.line("// checks (the grid's reach has no room for a growth in this build).");
            }
            o.line("unsigned pm = 0xffffffffu;");
            let cond = if half {
                let grown: Vec<String> = covers
                    .iter()
                    .map(|(s, _)| format!("gmp_lp_e(S[{s}]) <= {eh_max}"))
                    .collect();
                format!(
                    "m.prox != nullptr && (SWEEP ? ({}) : (!HALF || eh <= {eh_max}))",
                    grown.join(" && ")
                )
            } else {
                "!SWEEP && m.prox != nullptr".to_string()
            };
            o.open(format!("if ({cond}) {{"));
            let terms: Vec<String> = covers
                .iter()
                .map(|(s, _)| format!("gmp_prox(m, gmp_lp_c(S[{s}]))"))
                .collect();
            o.line(format!("pm = {};", terms.join(" | ")));
            o.close("}");
        }
        o.line("// Every body against every obstacle.");
        o.line("#pragma unroll 1");
        o.open("for (unsigned oi = 0; oi < m.num_obstacles; oi++) {");
        if prox {
            o.line("if (oi < 32u && ((pm >> oi) & 1u) == 0u) continue;");
        }
        o.line(format!("unsigned t = {t_lo}, p = 0, k = 0;"));
        o.line("bool resume = false;");
        if gated {
            o.line("unsigned long long mask = 0ull;");
        }
        o.open("for (;;) {");
        o.line("const GmpObstacle o = m.obstacles[oi];");
        o.line("unsigned r = 0u;");
        if gated {
            for (cond, kind) in [
                ("if (o.kind == GMP_BOX)", "GMP_BOX"),
                ("else if (o.kind == GMP_CYLINDER)", "GMP_CYLINDER"),
                (
                    "else if (o.kind == GMP_SPHERE || o.kind == GMP_MESH)",
                    "GMP_SPHERE",
                ),
            ] {
                o.open(format!("{cond} {{"));
                o.line(format!(
                    "if (!resume) mask = gmp_lp_top_mask<{kind}, SWEEP, HALF>(S, o);"
                ));
                o.line(format!(
                    "r = gmp_lp_env<{kind}, SWEEP, HALF, TRI>(S, o, mask, t, p, k, resume{und_arg});"
                ));
                o.close("}");
            }
        } else {
            let end = if streamed {
                format!("{t_hi}u, ")
            } else {
                String::new()
            };
            if gen.fold {
                // Rotations about z: the same branch for every thread (one obstacle at a time).
                o.line("const bool zr = gmp_obstacle_zrot(o);");
                o.line(format!(
                    "if (o.kind == GMP_BOX && zr) r = gmp_lp_env<GMP_LP_BOX_Z, SWEEP, HALF, TRI>(S, o, {end}t, p, k, resume{und_arg});"
                ));
                o.line(format!(
                    "else if (o.kind == GMP_BOX) r = gmp_lp_env<GMP_BOX, SWEEP, HALF, TRI>(S, o, {end}t, p, k, resume{und_arg});"
                ));
                o.line(format!("else if (o.kind == GMP_CYLINDER && zr) r = gmp_lp_env<GMP_LP_CYLINDER_Z, SWEEP, HALF, TRI>(S, o, {end}t, p, k, resume{und_arg});"));
            } else {
                o.line(format!(
                    "if (o.kind == GMP_BOX) r = gmp_lp_env<GMP_BOX, SWEEP, HALF, TRI>(S, o, {end}t, p, k, resume{und_arg});"
                ));
            }
            o.line(format!("else if (o.kind == GMP_CYLINDER) r = gmp_lp_env<GMP_CYLINDER, SWEEP, HALF, TRI>(S, o, {end}t, p, k, resume{und_arg});"));
            o.line(format!("else if (o.kind == GMP_SPHERE || o.kind == GMP_MESH) r = gmp_lp_env<GMP_SPHERE, SWEEP, HALF, TRI>(S, o, {end}t, p, k, resume{und_arg});"));
        }
        o.line("if (r == 0u) break;");
        o.line("if (r == 1u) return false;");
        if store_frames {
            o.line("const unsigned bi = gmp_lp_body[k].w & 0x7fffffffu;");
            o.line("const auto s = S[bi];");
            o.line(
                "if (!gmp_lp_env_fine(m, fr, bi, oi, gmp_lp_c(s), SWEEP ? gmp_lp_e(s) : 0.0f)) return false;",
            );
            o.line("k++;");
            o.line("resume = true;");
        } else {
            for l in to_twin {
                o.line(*l);
            }
        }
        o.close("}");
        o.close("}");
        o.line(format!(
            "// The self pairs, block by block, {LOOPED_PAIR_GROUP} at a time."
        ));
        if gated {
            o.line("// The top-level blocks' bounds side by side; the sub-blocks of a fired gate, [base, sub_end):");
            o.line("// bit k - base of sub says their bound fired.");
            o.line("const unsigned long long top = gmp_lp_block_mask<SWEEP, HALF>(S);");
            o.line("unsigned long long sub = 0ull;");
            o.line("unsigned base = 0u, sub_end = 0u;");
        }
        o.line("// Body a's slot, kept while consecutive groups share a (the same for every thread, so the");
        o.line("// branch does not diverge): one local-memory load fewer per group.");
        o.line("unsigned la = 0xffffffffu;");
        o.line("typename GmpLpSlotOf<SWEEP, HALF>::T a{};");
        o.line("#pragma unroll 1");
        o.open(format!("for (unsigned k = {b_lo}u; k < {b_hi}u; k++) {{"));
        if gated {
            o.line("if (k < sub_end && ((sub >> (k - base)) & 1ull) == 0ull) continue;");
            o.line("const GmpLpBlock B = gmp_lp_block[k];");
            o.open("if (k >= sub_end) {");
            o.line("bool fire = true;");
            o.open("if (B.ord < 64u) {");
            o.line("fire = ((top >> B.ord) & 1ull) != 0ull;");
            o.mid("} else if (B.pa >= 0) {");
            o.line("const auto a = S[B.pa];");
            o.line("const auto b = S[B.pb];");
            o.line("const V3 d = gmp_sub(gmp_lp_c(a), gmp_lp_c(b));");
            o.line("const float rr = (SWEEP || HALF) ? B.r + gmp_lp_e(a) + gmp_lp_e(b) : B.r;");
            o.line("fire = gmp_dot(d, d) <= rr * rr;");
            o.close("}");
            o.open("if (!fire) {");
            o.line("k = B.skip - 1u;");
            o.line("continue;");
            o.close("}");
            o.open("if (B.skip > k + 1u) {");
            o.line("// A gate that fired: its sub-blocks' bound tests side by side.");
            o.line("sub = gmp_lp_gate_mask<SWEEP, HALF>(S, k);");
            o.line("base = k + 1u;");
            o.line("sub_end = B.skip;");
            o.line("continue;");
            o.close("}");
            o.close("}");
        } else {
            o.line("const GmpLpBlock B = gmp_lp_block[k];");
            o.open("if (B.pa >= 0) {");
            o.line("const auto a = S[B.pa];");
            o.line("const auto b = S[B.pb];");
            o.line("const V3 d = gmp_sub(gmp_lp_c(a), gmp_lp_c(b));");
            o.line(format!(
                "const float rr = (SWEEP || HALF) ? {} : B.r;",
                grow_ab("B.r")
            ));
            o.line("if (!(gmp_dot(d, d) <= rr * rr)) continue;");
            o.close("}");
        }
        o.line("#pragma unroll 1");
        o.open("for (unsigned u = B.lo; u < B.hi; u++) {");
        o.line("const GmpLpGroup U = gmp_lp_group[u];");
        o.open("if (U.a != la) {");
        o.line("la = U.a;");
        o.line("a = S[U.a];");
        o.close("}");
        o.open("if (U.pb >= 0) {");
        o.line("const auto b = S[U.pb];");
        o.line("const V3 d = gmp_sub(gmp_lp_c(a), gmp_lp_c(b));");
        o.line(format!(
            "const float rr = (SWEEP || HALF) ? {} : U.r;",
            grow_ab("U.r")
        ));
        o.line("if (!(gmp_dot(d, d) <= rr * rr)) continue;");
        o.close("}");
        o.line(format!("bool t[{LOOPED_PAIR_GROUP}];"));
        o.line("#pragma unroll");
        o.open(format!(
            "for (unsigned j = 0; j < {LOOPED_PAIR_GROUP}u; j++) {{"
        ));
        emit_row(o);
        o.line("float rr2 = gmp_lp_f32(P.rr2);");
        if half {
            o.open("if (HALF) {");
            o.line("// rab grown by twice the configuration's largest rounding bound: beyond it, the exact");
            o.line("// centres are beyond rab.");
            o.line("const float rr = gmp_lp_f32(P.rab) + eh2;");
            o.line("rr2 = rr * rr;");
            o.close("}");
        }
        o.open("if (SWEEP) {");
        o.line("// ra + rb + margin + ea + eb, the growths in the pair's order: the bodies' whole sweeps,");
        o.line("// then, where those do not put the two out of reach, the pair's own (sweep.rs Sweep::pair,");
        o.line("// no larger).");
        o.line("const bool sw = (P.w & 0x40000000u) != 0u;");
        o.line("const float rab = gmp_lp_f32(P.rab);");
        o.line("const float rr = sw ? rab + gmp_lp_e(b) + gmp_lp_e(a) : rab + gmp_lp_e(a) + gmp_lp_e(b);");
        o.line("rr2 = rr * rr;");
        o.open("if (!(dd > rr2)) {");
        o.line("float e0, e1;");
        o.line("gmp_pair_sweeps_at(m, sw ? P.w & 0x3fffffffu : U.a, sw ? U.a : P.w & 0x3fffffffu, diff, n, &e0, &e1);");
        o.line("const float rp = rab + e0 + e1;");
        o.line("rr2 = rp * rp;");
        o.close("}");
        o.close("}");
        o.line("// Sphere pairs: within reach is a collision; others: not beyond reach goes on.");
        o.line("t[j] = (P.w >> 31) != 0u ? !(dd > rr2) : dd <= rr2;");
        o.close("}");
        let any: Vec<String> = (0..LOOPED_PAIR_GROUP).map(|j| format!("t[{j}]")).collect();
        if any_fine_pair {
            o.open(format!("if ({}) {{", any.join(" | ")));
            o.line("#pragma unroll 1");
            o.open(format!(
                "for (unsigned j = 0; j < {LOOPED_PAIR_GROUP}u; j++) {{"
            ));
            o.line("if (!t[j]) continue;");
            o.line("const GmpLpPair P = gmp_lp_pair[U.row + j];");
            o.line("if ((P.w >> 31) == 0u) return false;");
            o.line("const unsigned ib = P.w & 0x3fffffffu;");
            o.line("const auto b = S[ib];");
            o.line(
                "// The pair's own growths (sweep.rs Sweep::pair): ea of body U.a, eb of body ib.",
            );
            o.line("float ea = 0.0f, eb = 0.0f;");
            o.line("if (SWEEP) gmp_pair_sweeps_at(m, U.a, ib, diff, n, &ea, &eb);");
            o.line(
                "// The out-of-line test with the pair's order (its d is GJK's first direction).",
            );
            o.open("if ((P.w & 0x40000000u) != 0u) {");
            o.line("if (!gmp_lp_pair_fine(m, fr, ib, U.a, eb, ea, gmp_sub(gmp_lp_c(b), gmp_lp_c(a)))) return false;");
            o.mid("} else {");
            o.line("if (!gmp_lp_pair_fine(m, fr, U.a, ib, ea, eb, gmp_sub(gmp_lp_c(a), gmp_lp_c(b)))) return false;");
            o.close("}");
            o.close("}");
            o.close("}");
        } else if half {
            o.open(format!("if ({}) {{", any.join(" | ")));
            emit_tri_rows(o);
            o.line("// Sphere pairs only: any pair within reach is a collision. The f16 pass: where the reach");
            o.line("// shrunk by both rounding bounds holds the pair too (see emit_half_slot); else undecided.");
            o.line("if (!HALF) return false;");
            o.line("#pragma unroll 1");
            o.open(format!(
                "for (unsigned j = 0; j < {LOOPED_PAIR_GROUP}u; j++) {{"
            ));
            o.line("// Every row again (t[] is not kept: indexing it here would put it in local memory), grown by");
            o.line("// its centres' own bounds (a row that fires so fired above; padding rows never fire).");
            emit_row(o);
            o.line("const float rab = gmp_lp_f32(P.rab);");
            o.line("const float rg = rab + gmp_lp_e(a) + gmp_lp_e(b);");
            o.line("if (!(dd <= rg * rg)) continue;");
            o.line("const float rs = rab - gmp_lp_e(a) - gmp_lp_e(b);");
            o.line("if (rs >= 0.0f && dd <= rs * rs) return false;");
            o.line("und = true;");
            o.close("}");
            close_tri_rows(o);
            o.close("}");
        } else {
            o.line("// Sphere pairs only: any pair within reach is a collision.");
            o.open(format!("if ({}) {{", any.join(" | ")));
            emit_tri_rows(o);
            o.line("return false;");
            close_tri_rows(o);
            o.close("}");
        }
        o.close("}");
        o.close("}");
        Ok::<(), SpecialiseError>(())
    };
    if gen.fold {
        gen.emit_fold_guard(o, to_twin)?;
    }
    o.line(format!(
        "typename GmpLpSlotOf<SWEEP, HALF>::T S[{}];",
        ns.max(1)
    ));
    o.line("bool hok = true; // every centre fits an f16 (the f16 pass only)");
    o.line("float hmx = 0.0f; // the largest |coordinate| of the centres (the f16 pass only)");
    if tri {
        o.line("// A test of the f16 pass between its grown and shrunk reach, or (TRI) a swept test that fired");
        o.line("// where the same test without the sweep did not.");
        o.line("bool und = false;");
    }
    if store_frames {
        o.line(format!("Xf fr[{}];", nf.max(1)));
    }
    gen.emit_steps(o);
    for (g, bodies) in groups.iter().enumerate() {
        let frame = g as i32 - 1;
        if g > 0 {
            gen.emit_frame(o, g - 1)?;
            if store_frames {
                o.line(format!("fr[{}] = F{};", g - 1, g - 1));
            }
        }
        let bound_slots: Vec<(usize, V3)> = slots
            .bounds
            .iter()
            .enumerate()
            .filter(|(_, (f, _))| *f == frame)
            .map(|(i, (_, c))| (nb + i, *c))
            .collect();
        if bodies.is_empty() && bound_slots.is_empty() {
            continue;
        }
        if frame < 0 && !gen.fold {
            o.line("const Xf FR = xf_identity();");
        }
        o.line(format!("float ef{g} = 0.0f;"));
        for &bi in bodies {
            let b = &m.bodies[bi];
            o.open(format!(
                "{{ // body {bi} (link {}, {} vertices, {} covering spheres)",
                b.link, b.vert_count, b.sphere_count
            ));
            let centre = gen.world_point(o, frame, &b.center, &|| format!("body {bi} centre"))?;
            o.line(format!("const V3 c = {centre};"));
            o.line("float e = 0.0f;");
            o.open("if (SWEEP) {");
            o.line("float a = 0.0f;");
            for t in gen.sweep_terms(bi)? {
                o.line(t);
            }
            o.line("e = 0.5f * a;");
            o.line(format!("ef{g} = fmaxf(ef{g}, e);"));
            o.close("}");
            o.line(format!("gmp_lp_put(S, {bi}u, c, e, hok, hmx);"));
            o.close("}");
        }
        for (s, c) in bound_slots {
            let centre = gen.world_point(o, frame, &c, &|| "culling bound centre".into())?;
            o.line(format!(
                "gmp_lp_put(S, {s}u, {centre}, ef{g}, hok, hmx); // culling bound"
            ));
        }
        if streamed {
            // This group's bodies against the obstacles, then the pairs whose later body it holds.
            let tr = top_of_group[g].map_or((0, 0), |t| (t, t + 1));
            let br = blocks_of_group[g];
            if tr.1 > tr.0 || br.1 > br.0 {
                o.open(format!("{{ // frame group {g}: its tests"));
                emit_tests(o, tr, br)?;
                o.close("}");
            }
        }
    }
    if half {
        o.open("if (HALF && !hok) {");
        o.line("// The f16 pass with a centre beyond the f16 range: the exact code decides.");
        o.line("*undp = true;");
        o.line("return false;");
        o.close("}");
        o.line("// The f16 pass: the largest rounding bound of the centres, and twice it (exact).");
        o.line("const float eh = HALF ? gmp_lp_eh(hmx) : 0.0f;");
        o.line("const float eh2 = eh + eh;");
    }
    if !streamed {
        emit_tests(o, (0, tops.len()), (0, block_rows.len()))?;
    }
    if tri {
        o.open("if ((HALF || TRI) && und) {");
        o.line("*undp = true;");
        o.line("return false;");
        o.close("}");
    }
    o.line("return true;");
    o.close("}");
    Ok((half, tri))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::RobotShapes;
    use crate::robot::RobotModel;

    /// The bundled arm's collision model (polytopes).
    fn arm() -> CollisionModel {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let robot = RobotModel::from_urdf_file(
            &root.join("urdf/gmp_arm.urdf"),
            Some(&root.join("urdf/gmp_arm.srdf")),
            &Default::default(),
        )
        .expect("bundled arm");
        let group = robot.group("arm").expect("group");
        let base = robot.tree.neutral_state();
        CollisionModel::build(&robot, &group, &base, RobotShapes::Polytopes, 1e-4).expect("model")
    }

    /// `looped-half` on a model that needs out-of-line tests (polytopes) is the exact code alone
    /// (tests/specialise.rs checks the f16 pass on the MBM sphere models).
    #[test]
    fn half_layout_keeps_polytope_models_exact() {
        assert_eq!(Layout::parse("looped-half"), Some(Layout::LoopedHalf));
        assert!(Layout::LoopedHalf.half() && Layout::LoopedHalf.compact());
        assert!(Layout::LoopedHalf.folds());
        let poly = generate_with(&arm(), Layout::LoopedHalf).expect("polytopes");
        assert!(!poly.generated.contains("gmp_spec_valid<false, true>"));
        assert!(!poly.generated.contains("GmpLpSlotH"));
        assert!(!poly.generated.contains("GMP_CONFIG_HALF"));
    }

    #[test]
    fn every_body_and_pair_is_emitted_in_both_layouts() {
        let m = arm();
        assert_eq!(Layout::for_model(&m), Layout::Inline);
        for layout in [Layout::Inline, Layout::Grouped] {
            let g = generate_with(&m, layout).expect("generated");
            let st = &g.stats;
            assert_eq!(st.layout, layout.name());
            assert_eq!(
                st.sphere_pairs + st.fine_pairs + st.skipped_pairs,
                m.self_pairs.len()
            );
            let pairs = g.generated.matches("// pair ").count();
            assert_eq!(pairs, st.sphere_pairs + st.fine_pairs, "{layout:?}");
            for b in 0..m.bodies.len() {
                assert!(
                    g.generated.contains(&format!("// body {b} ")),
                    "{layout:?}: body {b} missing"
                );
            }
            assert!(g
                .source
                .contains("#define GMP_CONFIG_VALID(m, q) gmp_spec_config_valid"));
            assert!(g.source.ends_with(crate::gpu::kernels::COLLISION_CU));
        }
    }

    /// Every culling bound holds the bounding sphere of every body under it (checked in f64
    /// against the f32 values the kernel uses), parts split large sets, and every body is
    /// tested exactly once under the tree.
    #[test]
    fn culling_bounds_hold_their_bodies() {
        let mut m = arm();
        // Twenty sphere-like bodies spread along the first moving frame.
        let template = m.bodies[m.bodies.len() - 1];
        let mut added = Vec::new();
        for i in 0..20 {
            let mut b = template;
            b.frame = 0;
            b.center = [
                0.05 * i as f32,
                0.013 * (i % 3) as f32,
                -0.2 + 0.031 * i as f32,
            ];
            b.radius = 0.01 + 0.003 * (i % 5) as f32;
            added.push(m.bodies.len());
            m.bodies.push(b);
        }
        m.reach = vec![0.0; m.bodies.len() * m.frames.len()];
        m.reach_by_frame.clear();
        fn walk(m: &CollisionModel, t: &Cull, seen: &mut Vec<usize>) -> Vec<usize> {
            let mut under: Vec<usize> = t.bodies.clone();
            for p in &t.parts {
                under.extend(walk(m, p, seen));
            }
            seen.extend(&t.bodies);
            if let Some((c, r)) = t.bound {
                for &bi in &under {
                    let b = &m.bodies[bi];
                    let d: f64 = (0..3)
                        .map(|k| (f64::from(b.center[k]) - f64::from(c[k])).powi(2))
                        .sum::<f64>()
                        .sqrt();
                    assert!(d + f64::from(b.radius) < f64::from(r), "body {bi}");
                }
            } else {
                assert!(t.parts.is_empty() && t.bodies.len() < CULL_MIN_BODIES);
            }
            assert!(t.bodies.len() <= CULL_SPLIT_ABOVE);
            under
        }
        let tree = Cull::new(&m, &added);
        assert!(!tree.parts.is_empty(), "20 bodies are split");
        let mut seen = Vec::new();
        walk(&m, &tree, &mut seen);
        seen.sort_unstable();
        assert_eq!(seen, added);
        for layout in [Layout::Inline, Layout::Grouped] {
            let g = generate_with(&m, layout).expect("generated");
            assert!(g.stats.cull_bounds > 0, "{layout:?}");
            for &bi in &added {
                // One near test per obstacle kind per body.
                assert_eq!(
                    g.generated.matches(&format!("n{bi} = gmp_near_")).count(),
                    3,
                    "{layout:?} body {bi}"
                );
            }
        }
    }

    /// The folded builds emit every body and pair too, guard the joint values, dispatch
    /// rotations about z, and multiply less: the arm's z-axis joints and zero offsets fold.
    #[test]
    fn folded_layouts_emit_everything_with_fewer_products() {
        let m = arm();
        for (plain, folded) in [
            (Layout::Inline, Layout::InlineFold),
            (Layout::Grouped, Layout::GroupedFold),
            (Layout::LoopedCompact, Layout::LoopedCompactFold),
        ] {
            assert_eq!(folded.base(), plain.base());
            assert_eq!(folded.compact(), plain.compact());
            assert!(folded.folds() && !plain.folds());
            assert_eq!(Layout::parse(folded.name()), Some(folded));
            let p = generate_with(&m, plain).expect("plain");
            let f = generate_with(&m, folded).expect("folded");
            assert_eq!(
                p.generated.matches("// pair ").count(),
                f.generated.matches("// pair ").count()
            );
            assert!(f.generated.contains("<= 1e4f"), "joint-value guard");
            assert!(f.generated.contains("gmp_frames_valid(m, frs"), "fallback");
            assert!(f.generated.contains("gmp_near_box_z"));
            assert!(!f.generated.contains("gmp_joint_frame"));
            // Products written out in the folded forward kinematics vs the calls' products
            // (gmp_joint_frame: 18 in axis_angle + 36 in xf_mul; xf_mul: 36 per frame).
            let fk_products: usize = f
                .generated
                .lines()
                .filter(|l| l.contains("const float _f") && l.contains(" * "))
                .count();
            let per_frame_unfolded = 18 + 36 + 36;
            assert!(
                fk_products < per_frame_unfolded * m.frames.len(),
                "{fk_products} products"
            );
        }
    }

    /// The looped layout lists every body once in its obstacle tables and every pair once in its
    /// pair tables (groups padded to LOOPED_PAIR_GROUP rows), in one function of loops.
    #[test]
    fn looped_layout_tables_hold_every_body_and_pair() {
        let m = arm();
        assert_eq!(Layout::parse("looped"), Some(Layout::Looped));
        assert_eq!(Layout::parse("looped-gated"), Some(Layout::LoopedGated));
        assert_eq!(Layout::parse("streamed"), Some(Layout::Streamed));
        assert_eq!(Layout::parse("looped-compact"), Some(Layout::LoopedCompact));
        for layout in [
            Layout::Looped,
            Layout::LoopedGated,
            Layout::Streamed,
            Layout::LoopedCompact,
            Layout::LoopedCompactFold,
        ] {
            assert_eq!(layout.base(), Layout::Looped);
            assert_eq!(layout.folds(), layout == Layout::LoopedCompactFold);
            looped_tables_hold_every_body_and_pair(&m, layout);
        }
    }

    fn looped_tables_hold_every_body_and_pair(m: &CollisionModel, layout: Layout) {
        let g = generate_with(m, layout).expect("generated");
        let gated = layout == Layout::LoopedGated;
        assert_eq!(g.generated.contains("gmp_lp_top_mask"), gated);
        assert_eq!(g.generated.contains("gmp_lp_gate_mask"), gated);
        let st = &g.stats;
        assert_eq!(st.layout, layout.name());
        assert_eq!(
            st.sphere_pairs + st.fine_pairs + st.skipped_pairs,
            m.self_pairs.len()
        );
        assert_eq!(
            g.generated.matches("// pair ").count(),
            st.sphere_pairs + st.fine_pairs
        );
        let rows =
            g.generated.matches("// pair ").count() + g.generated.matches("// padding\n").count();
        assert_eq!(rows % LOOPED_PAIR_GROUP, 0);
        for b in 0..m.bodies.len() {
            assert_eq!(
                g.generated.matches(&format!("// body {b}\n")).count(),
                1,
                "body {b}"
            );
            assert!(
                g.generated.contains(&format!("// body {b} (")),
                "body {b} centre"
            );
        }
        assert!(st.slots >= m.bodies.len());
        // Polytope bodies: the frames are stored and the out-of-line tests called from the loops.
        assert!(g.generated.contains("gmp_lp_pair_fine(m, fr"));
        // Folded: the twin takes joint values outside the guard's range.
        assert_eq!(g.generated.contains("gmp_lp_twin"), layout.folds());
        assert!(g.generated.contains("__launch_bounds__"));
        assert!(g.generated.contains(REGISTER_CAP_MACRO));
        assert!(!g.generated.contains("gmp_spec_chunk"));
    }

    #[test]
    fn non_finite_constants_and_bad_tables_are_refused() {
        let mut m = arm();
        m.margin = f32::NAN;
        assert!(matches!(
            generate(&m),
            Err(SpecialiseError::NonFinite { .. })
        ));
        let mut m = arm();
        m.self_pairs.push([0, 999]);
        assert!(matches!(
            generate(&m),
            Err(SpecialiseError::Inconsistent(_))
        ));
        let mut m = arm();
        m.bodies[0].center[1] = f32::INFINITY;
        assert!(generate(&m).is_err());
    }

    /// Parses what [`f32_literal`] writes back to an f32 (exactly).
    fn parse(lit: &str) -> f32 {
        let s = lit.trim_start_matches('(').trim_end_matches(')');
        let (neg, s) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s),
        };
        let s = s.strip_prefix("0x").unwrap().strip_suffix('f').unwrap();
        let (mant, exp) = s.split_once('p').unwrap();
        let exp: i32 = exp.parse().unwrap();
        let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
        let mut v = int.parse::<u64>().unwrap() as f64;
        for (i, c) in frac.chars().enumerate() {
            v += c.to_digit(16).unwrap() as f64 / 16f64.powi(i as i32 + 1);
        }
        let v = (v * 2f64.powi(exp)) as f32;
        if neg {
            -v
        } else {
            v
        }
    }

    #[test]
    fn literals_are_exact() {
        let mut vals = vec![
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            0.1,
            1e-4,
            std::f32::consts::PI,
            f32::MAX,
            f32::MIN_POSITIVE,
            f32::MIN_POSITIVE / 3.0,
            -1.0e-42,
            0.333,
            1.5703125,
        ];
        let mut x = 0x1234_5678u32;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let v = f32::from_bits(x);
            if v.is_finite() {
                vals.push(v);
            }
        }
        for v in vals {
            let l = f32_literal(v).unwrap();
            assert_eq!(parse(&l).to_bits(), v.to_bits(), "{v:e} -> {l}");
        }
        assert_eq!(f32_literal(1.0).unwrap(), "0x1.000000p+0f");
        assert_eq!(f32_literal(-0.0).unwrap(), "(-0x0p+0f)");
        assert!(f32_literal(f32::NAN).is_none());
        assert!(f32_literal(f32::INFINITY).is_none());
    }
}
