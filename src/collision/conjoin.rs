//! A checker made of several checkers over the same joint space: an item is free only when
//! every part finds it free.
//!
//! The planning service uses it for allowed collisions between links and obstacles: one part
//! checks the whole robot against the obstacles no link may touch, and one part per set of
//! allowed links checks the robot without those links against the obstacles they may touch
//! ([`crate::robot::RobotModel::obstacle_checks_except`]). Every part is an ordinary checker
//! of the chosen backend, so each stays conservative, and so does their conjunction.

use super::{Backend, Checker, CollisionError, ConfigBatch, MotionBatch};
use crate::planners::device::DevicePlanner;
use crate::robot::JointSpace;

/// The conjunction of checkers (see the module documentation). Later parts see only the
/// items the earlier parts found free, except for large batches of configurations on the GPU,
/// which every part checks whole, all at once (see `CONCURRENT_MIN`).
pub struct AllOf {
    parts: Vec<Box<dyn Checker>>,
}

impl std::fmt::Debug for AllOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AllOf")
            .field("parts", &self.parts.len())
            .finish()
    }
}

impl AllOf {
    /// Joins `parts`, which must be at least one and share one joint space (same joint names
    /// in the same order).
    pub fn new(parts: Vec<Box<dyn Checker>>) -> Result<Self, CollisionError> {
        let bad = |message: String| CollisionError::Backend {
            backend: "all-of".into(),
            message,
        };
        let first = parts
            .first()
            .ok_or_else(|| bad("a conjunction needs at least one checker".into()))?;
        let names = &first.space().names;
        if let Some(k) = parts.iter().position(|p| &p.space().names != names) {
            return Err(bad(format!(
                "checker {k} has joints {:?}, the first has {:?}",
                parts[k].space().names,
                names
            )));
        }
        Ok(Self { parts })
    }

    /// The number of joined checkers.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Always false: a conjunction has at least one part.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }
}

/// Batches of configurations at least this large go to every part whole and at once when no
/// part runs on the CPU alone (see [`joined`]).
pub const CONCURRENT_MIN: usize = 4096;

/// The joined verdicts of `parts` on the `len` items of `all`.
///
/// The first part checks every item and each further part only the items still free (`pick`
/// builds the batch of those): a check costs in proportion to the items it visits on the CPU,
/// and so does a motion's on the GPU.
///
/// With `whole` (configurations) a GPU call costs mostly its round trip and the transfer,
/// and gathering the free items into a new batch costs as much again on the host (measured
/// on an H200: two CUDA checkers joined that way at a quarter of one checker's rate,
/// `results/allowed/`); so when every part uses the GPU (the CUDA or the hybrid backend) and
/// the batch has at least [`CONCURRENT_MIN`] items, every part checks the whole batch, all
/// parts at once on threads of their own, and the verdicts are joined.
fn joined<B: Sync>(
    parts: &[Box<dyn Checker>],
    (all, len, whole): (&B, usize, bool),
    pick: impl Fn(&[usize]) -> Result<B, CollisionError>,
    check: impl Fn(&dyn Checker, &B) -> Result<Vec<bool>, CollisionError> + Sync,
) -> Result<Vec<bool>, CollisionError> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(vec![false; len]);
    };
    let wrong = |part: &dyn Checker, got: usize, want: usize| CollisionError::Backend {
        backend: part.backend().name().into(),
        message: format!("{got} verdicts for {want} items in a conjunction"),
    };
    let concurrent = whole
        && len >= CONCURRENT_MIN
        && !rest.is_empty()
        && parts.iter().all(|p| p.backend() != Backend::Cpu);
    if concurrent {
        let answers: Vec<Result<Vec<bool>, CollisionError>> = std::thread::scope(|s| {
            let check = &check;
            let running: Vec<_> = parts
                .iter()
                .map(|p| s.spawn(move || check(p.as_ref(), all)))
                .collect();
            running
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(CollisionError::Backend {
                            backend: "all-of".into(),
                            message: "a part's check panicked".into(),
                        })
                    })
                })
                .collect()
        });
        let mut verdicts = vec![true; len];
        for (part, answer) in parts.iter().zip(answers) {
            let answer = answer?;
            if answer.len() != len {
                return Err(wrong(part.as_ref(), answer.len(), len));
            }
            for (v, ok) in verdicts.iter_mut().zip(answer) {
                *v &= ok;
            }
        }
        return Ok(verdicts);
    }
    let mut verdicts = check(first.as_ref(), all)?;
    if verdicts.len() != len {
        return Err(wrong(first.as_ref(), verdicts.len(), len));
    }
    for part in rest {
        let free: Vec<usize> = (0..len).filter(|&i| verdicts[i]).collect();
        if free.is_empty() {
            break;
        }
        let answers = check(part.as_ref(), &pick(&free)?)?;
        if answers.len() != free.len() {
            return Err(wrong(part.as_ref(), answers.len(), free.len()));
        }
        for (&i, ok) in free.iter().zip(answers) {
            verdicts[i] = ok;
        }
    }
    Ok(verdicts)
}

impl Checker for AllOf {
    fn space(&self) -> &JointSpace {
        self.parts[0].space()
    }

    fn check_configs(&self, configs: &ConfigBatch) -> Result<Vec<bool>, CollisionError> {
        let dof = configs.dof();
        joined(
            &self.parts,
            (configs, configs.len(), true),
            |items| {
                let mut b = ConfigBatch::with_capacity(dof, items.len());
                for &i in items {
                    b.push(configs.row(i))?;
                }
                Ok(b)
            },
            |c, b| c.check_configs(b),
        )
    }

    fn check_motions_refined(
        &self,
        motions: &MotionBatch,
        resolution: f64,
        max_refinements: u32,
    ) -> Result<Vec<bool>, CollisionError> {
        joined(
            &self.parts,
            (motions, motions.len(), false),
            |items| {
                let mut b = MotionBatch::new(motions.from.dof());
                for &i in items {
                    b.push(motions.from.row(i), motions.to.row(i))?;
                }
                Ok(b)
            },
            |c, b| c.check_motions_refined(b, resolution, max_refinements),
        )
    }

    fn backend(&self) -> Backend {
        self.parts[0].backend()
    }

    fn configs_evaluated(&self) -> Option<u64> {
        self.parts
            .iter()
            .map(|p| p.configs_evaluated())
            .sum::<Option<u64>>()
    }

    /// None: a planner resident on one part's device would check only that part's world.
    fn device_planner(&self) -> Option<&dyn DevicePlanner> {
        None
    }

    fn contacts(&self, q: &[f64]) -> Option<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.parts {
            for c in p.contacts(q)? {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::demo::bundled;
    use crate::collision::{CheckerOptions, CpuChecker};
    use crate::scene::{Obstacle, Scene, Shape};
    use nalgebra::{Isometry3, Vector3};
    use rand::{Rng, SeedableRng};

    #[test]
    fn verdicts_are_the_conjunction_and_later_parts_see_only_free_items() {
        let (robot, scene) = bundled().expect("bundled");
        let group = robot.default_group();
        let base = robot.tree.neutral_state();
        let cpu = |s: &Scene| {
            let opts = CheckerOptions {
                threads: 1,
                ..CheckerOptions::default()
            };
            CpuChecker::new(&robot, &group, &base, s, opts).expect("checker")
        };
        // A second world: only a large block beside the arm.
        let mut block = Scene::new(scene.frame());
        block
            .add(Obstacle {
                id: "block".into(),
                shape: Shape::Box {
                    half_extents: Vector3::new(0.3, 0.3, 0.3),
                },
                pose: Isometry3::translation(0.0, 0.6, 0.5),
            })
            .expect("block");
        let (a, b) = (cpu(&scene), cpu(&block));
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let dof = group.space.dof();
        let mut batch = ConfigBatch::new(dof);
        for _ in 0..3000 {
            let q: Vec<f64> = (0..dof)
                .map(|k| rng.random_range(group.space.lower[k]..group.space.upper[k]))
                .collect();
            batch.push(&q).expect("push");
        }
        let (va, vb) = (
            a.check_configs(&batch).expect("a"),
            b.check_configs(&batch).expect("b"),
        );
        let both = AllOf::new(vec![Box::new(cpu(&scene)), Box::new(cpu(&block))]).expect("all");
        assert_eq!(both.len(), 2);
        let v = both.check_configs(&batch).expect("both");
        let want: Vec<bool> = va.iter().zip(&vb).map(|(x, y)| *x && *y).collect();
        assert_eq!(v, want);
        // Each world rules out configurations the other allows.
        assert!(va.iter().zip(&vb).any(|(x, y)| *x && !*y));
        assert!(va.iter().zip(&vb).any(|(x, y)| !*x && *y));
        // The second part saw only what the first found free.
        let free_a = va.iter().filter(|&&x| x).count() as u64;
        assert_eq!(both.configs_evaluated(), Some(batch.len() as u64 + free_a));
        // Motions too.
        let mut motions = MotionBatch::new(dof);
        for k in 0..500 {
            motions
                .push(batch.row(2 * k), batch.row(2 * k + 1))
                .expect("motion");
        }
        let (ma, mb) = (
            a.check_motions(&motions, 0.05).expect("a"),
            b.check_motions(&motions, 0.05).expect("b"),
        );
        let m = both.check_motions(&motions, 0.05).expect("both");
        let want: Vec<bool> = ma.iter().zip(&mb).map(|(x, y)| *x && *y).collect();
        assert_eq!(m, want);
        // Contacts are the union.
        let on_block = |i: usize| {
            b.contacts(batch.row(i))
                .is_some_and(|c| c.iter().any(|l| l.contains("'block'")))
        };
        let q = (0..batch.len())
            .find(|&i| !va[i] && on_block(i))
            .expect("in both");
        let c = both.contacts(batch.row(q)).expect("contacts");
        assert!(c.iter().any(|l| l.contains("'block'")), "{c:?}");
        assert!(c.iter().any(|l| !l.contains("'block'")), "{c:?}");
    }

    /// A CPU checker that says it runs on the GPU (to reach the whole-batch path here).
    struct AsGpu(CpuChecker);

    impl Checker for AsGpu {
        fn space(&self) -> &JointSpace {
            self.0.space()
        }
        fn check_configs(&self, c: &ConfigBatch) -> Result<Vec<bool>, CollisionError> {
            self.0.check_configs(c)
        }
        fn check_motions_refined(
            &self,
            m: &MotionBatch,
            r: f64,
            k: u32,
        ) -> Result<Vec<bool>, CollisionError> {
            self.0.check_motions_refined(m, r, k)
        }
        fn backend(&self) -> Backend {
            Backend::Cuda
        }
        fn configs_evaluated(&self) -> Option<u64> {
            self.0.configs_evaluated()
        }
    }

    #[test]
    fn gpu_parts_check_large_batches_whole_and_at_once() {
        let (robot, scene) = bundled().expect("bundled");
        let group = robot.default_group();
        let base = robot.tree.neutral_state();
        let cpu = |s: &Scene| {
            CpuChecker::new(&robot, &group, &base, s, CheckerOptions::default()).expect("cpu")
        };
        let mut empty_but_ball = Scene::new(scene.frame());
        empty_but_ball
            .add(Obstacle {
                id: "ball".into(),
                shape: Shape::Sphere { radius: 0.35 },
                pose: Isometry3::translation(0.3, 0.3, 0.6),
            })
            .expect("ball");
        let dof = group.space.dof();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        for n in [CONCURRENT_MIN - 1, CONCURRENT_MIN + 10] {
            let mut batch = ConfigBatch::new(dof);
            for _ in 0..n {
                let q: Vec<f64> = (0..dof)
                    .map(|k| rng.random_range(group.space.lower[k]..group.space.upper[k]))
                    .collect();
                batch.push(&q).expect("push");
            }
            let va = cpu(&scene).check_configs(&batch).expect("a");
            let vb = cpu(&empty_but_ball).check_configs(&batch).expect("b");
            let both = AllOf::new(vec![
                Box::new(AsGpu(cpu(&scene))),
                Box::new(AsGpu(cpu(&empty_but_ball))),
            ])
            .expect("all");
            let v = both.check_configs(&batch).expect("both");
            let want: Vec<bool> = va.iter().zip(&vb).map(|(x, y)| *x && *y).collect();
            assert_eq!(v, want, "{n} items");
            let free_a = va.iter().filter(|&&x| x).count() as u64;
            let seen = if n >= CONCURRENT_MIN {
                2 * n as u64
            } else {
                n as u64 + free_a
            };
            assert_eq!(both.configs_evaluated(), Some(seen), "{n} items");
        }
    }

    #[test]
    fn a_conjunction_needs_a_checker() {
        let e = AllOf::new(Vec::new()).expect_err("empty");
        assert!(e.to_string().contains("at least one"), "{e}");
    }
}
