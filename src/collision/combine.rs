//! Concurrent requests to one checker, combined into one batch (flat combining).
//!
//! Several threads that share one GPU checker (the parallel attempts of a plan, concurrent
//! service calls of the node) each ask for small batches, and each batch is a device round
//! trip that costs far more than the items in it. A [`Combiner`] lets them share rounds
//! without waiting for each other on purpose: a caller queues its request and takes its turn at
//! the executor; whoever holds the turn runs every request queued by then as one batch and
//! hands each caller its part. A caller whose request was run during someone else's turn finds
//! its answer when it gets the turn, and returns at once. A lone caller runs its own request
//! straight away, so nothing waits for company.
//!
//! The executor must answer every item as it would alone (the collision kernels check each
//! item on its own), so callers get exactly what a batch of their own would give.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::CollisionError;

/// Combines concurrent requests of type `T` whose answers are `X` (see the module
/// documentation).
#[derive(Debug)]
pub struct Combiner<T, X> {
    pending: Mutex<Vec<(T, Arc<Slot<X>>)>>,
    turn: Mutex<()>,
    requests: AtomicU64,
    batches: AtomicU64,
}

/// Where the turn holder leaves one caller's answer.
#[derive(Debug)]
struct Slot<X> {
    answer: Mutex<Option<Result<X, CollisionError>>>,
}

/// Requests answered and batches run by a [`Combiner`] so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CombineStats {
    /// Requests answered.
    pub requests: u64,
    /// Batches run (one executor call each); fewer than `requests` when requests were combined.
    pub batches: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<T, X> Default for Combiner<T, X> {
    fn default() -> Self {
        Self {
            pending: Mutex::new(Vec::new()),
            turn: Mutex::new(()),
            requests: AtomicU64::new(0),
            batches: AtomicU64::new(0),
        }
    }
}

impl<T, X> Combiner<T, X> {
    /// An idle combiner.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers `request`, possibly in one batch with other callers' requests. `exec` gets the
    /// queued requests in the order they were queued and must return one answer per request,
    /// in that order (every caller passes an equivalent `exec`: the turn holder's runs them
    /// all). A batch error is every caller's error; an `exec` that returns the wrong number of
    /// answers, or that panicked in another caller's turn, gives a [`CollisionError::Backend`].
    pub fn run<F>(&self, request: T, exec: F) -> Result<X, CollisionError>
    where
        F: FnOnce(Vec<T>) -> Result<Vec<X>, CollisionError>,
    {
        let slot = Arc::new(Slot {
            answer: Mutex::new(None),
        });
        lock(&self.pending).push((request, slot.clone()));
        let _turn = lock(&self.turn);
        if let Some(answer) = lock(&slot.answer).take() {
            return answer;
        }
        let queued = std::mem::take(&mut *lock(&self.pending));
        if queued.is_empty() {
            return Err(unfinished());
        }
        let (requests, slots): (Vec<T>, Vec<Arc<Slot<X>>>) = queued.into_iter().unzip();
        let count = slots.len();
        self.requests.fetch_add(count as u64, Ordering::Relaxed);
        self.batches.fetch_add(1, Ordering::Relaxed);
        let answers = exec(requests);
        let mut mine = None;
        let mut hand = |s: &Arc<Slot<X>>, a: Result<X, CollisionError>| {
            if Arc::ptr_eq(s, &slot) {
                mine = Some(a);
            } else {
                *lock(&s.answer) = Some(a);
            }
        };
        match answers {
            Ok(xs) if xs.len() == count => {
                for (s, x) in slots.iter().zip(xs) {
                    hand(s, Ok(x));
                }
            }
            Ok(xs) => {
                let message = format!(
                    "a combined batch of {count} requests got {} answers",
                    xs.len()
                );
                for s in &slots {
                    hand(s, Err(backend_error(message.clone())));
                }
            }
            Err(e) => {
                for s in &slots {
                    hand(s, Err(e.clone()));
                }
            }
        }
        // Not in the queue during its own turn: an earlier turn took it and ended without an
        // answer (its `exec` panicked).
        mine.unwrap_or_else(|| Err(unfinished()))
    }

    /// Requests waiting for a turn (for tests and diagnostics).
    pub fn queued(&self) -> usize {
        lock(&self.pending).len()
    }

    /// Requests answered and batches run so far.
    pub fn stats(&self) -> CombineStats {
        CombineStats {
            requests: self.requests.load(Ordering::Relaxed),
            batches: self.batches.load(Ordering::Relaxed),
        }
    }
}

/// Splits the answers of a combined batch into the callers' parts, `counts[k]` items for
/// request `k` in queue order; an error when the batch did not answer every item once.
pub fn split_answers<A>(
    answers: Vec<A>,
    counts: impl IntoIterator<Item = usize>,
) -> Result<Vec<Vec<A>>, CollisionError> {
    let total = answers.len();
    let mut rest = answers.into_iter();
    let mut parts = Vec::new();
    let mut used = 0;
    for n in counts {
        let part: Vec<A> = rest.by_ref().take(n).collect();
        used += n;
        if part.len() != n {
            break;
        }
        parts.push(part);
    }
    if used != total {
        return Err(backend_error(format!(
            "a combined batch of {used} items got {total} answers"
        )));
    }
    Ok(parts)
}

/// The answer of a request that an earlier turn took and did not finish.
fn unfinished() -> CollisionError {
    backend_error(
        "the combined batch holding this request did not finish (its executor panicked)".into(),
    )
}

fn backend_error(message: String) -> CollisionError {
    CollisionError::Backend {
        backend: "combined batch".into(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn double(reqs: Vec<u32>) -> Result<Vec<u32>, CollisionError> {
        Ok(reqs.into_iter().map(|r| 2 * r).collect())
    }

    #[test]
    fn a_lone_caller_runs_its_own_batch() {
        let c = Combiner::new();
        assert_eq!(c.run(21u32, double).unwrap(), 42);
        assert_eq!(c.run(5u32, double).unwrap(), 10);
        assert_eq!(
            c.stats(),
            CombineStats {
                requests: 2,
                batches: 2
            }
        );
    }

    /// Waits until `c` has `n` queued requests (at most 10 s).
    fn wait_queued(c: &Combiner<u32, u32>, n: usize) {
        let until = Instant::now() + Duration::from_secs(10);
        while c.queued() < n && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn requests_queued_during_a_turn_run_together_and_each_gets_its_answer() {
        let c = Combiner::new();
        let others = 7u32;
        std::thread::scope(|s| {
            // The first caller's turn lasts until every other caller has queued.
            let first = s.spawn(|| {
                c.run(100, |reqs| {
                    wait_queued(&c, others as usize);
                    double(reqs)
                })
            });
            // Give the first caller its turn before the others queue.
            let until = Instant::now() + Duration::from_secs(10);
            while c.stats().batches == 0 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            let handles: Vec<_> = (0..others)
                .map(|k| {
                    let c = &c;
                    s.spawn(move || c.run(k, double))
                })
                .collect();
            assert_eq!(first.join().unwrap().unwrap(), 200);
            for (k, h) in handles.into_iter().enumerate() {
                assert_eq!(h.join().unwrap().unwrap(), 2 * k as u32);
            }
        });
        assert_eq!(
            c.stats(),
            CombineStats {
                requests: 1 + u64::from(others),
                batches: 2
            },
            "the first request alone, then the seven queued during its turn in one batch"
        );
    }

    #[test]
    fn answers_split_into_the_callers_parts_or_an_error() {
        let parts = split_answers(vec![1, 2, 3, 4, 5, 6], [2, 0, 3, 1]).unwrap();
        assert_eq!(parts, vec![vec![1, 2], vec![], vec![3, 4, 5], vec![6]]);
        let short = split_answers(vec![1, 2, 3], [2, 2]).unwrap_err();
        assert!(
            short.to_string().contains("4 items got 3 answers"),
            "{short}"
        );
        let long = split_answers(vec![1, 2, 3], [1, 1]).unwrap_err();
        assert!(long.to_string().contains("2 items got 3 answers"), "{long}");
    }

    #[test]
    fn a_batch_error_reaches_every_caller_of_the_batch() {
        let c: Combiner<u32, u32> = Combiner::new();
        let e = c
            .run(1, |_| {
                Err(CollisionError::Backend {
                    backend: "test".into(),
                    message: "device lost".into(),
                })
            })
            .unwrap_err();
        assert!(e.to_string().contains("device lost"), "{e}");
        let e = c.run(1, |_| Ok(vec![1, 2])).unwrap_err();
        assert!(e.to_string().contains("1 requests got 2 answers"), "{e}");
        // The combiner keeps serving.
        assert_eq!(c.run(4, double).unwrap(), 8);
    }

    #[test]
    fn a_panicking_executor_fails_the_callers_it_took_and_the_combiner_keeps_serving() {
        let c: Combiner<u32, u32> = Combiner::new();
        std::thread::scope(|s| {
            // A first turn that lasts until two more callers have queued; whichever of them
            // gets the next turn takes both requests and its executor panics.
            let blocker = s.spawn(|| {
                c.run(0, |reqs| {
                    wait_queued(&c, 2);
                    double(reqs)
                })
            });
            let until = Instant::now() + Duration::from_secs(10);
            while c.stats().batches == 0 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            let failing = |k: u32| {
                let c = &c;
                s.spawn(move || {
                    c.run(k, |_| -> Result<Vec<u32>, CollisionError> {
                        panic!("executor failure (expected by the test)")
                    })
                })
            };
            let (a, b) = (failing(1), failing(2));
            assert_eq!(blocker.join().unwrap().unwrap(), 0);
            let outcomes = [a.join(), b.join()];
            let panicked = outcomes.iter().filter(|o| o.is_err()).count();
            assert_eq!(panicked, 1, "the turn holder's own call panics");
            let other = outcomes
                .into_iter()
                .find_map(|o| o.ok())
                .expect("one caller returns");
            let e = other.unwrap_err();
            assert!(e.to_string().contains("did not finish"), "{e}");
        });
        assert_eq!(c.run(3, double).unwrap(), 6);
    }
}
