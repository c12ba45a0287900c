//! A client's retry budget: resubmissions may add at most `ratio` of its
//! first sends plus `min_per_s` a second, with at most `burst` saved up.
//!
//! Why: a client resubmits on timeout and on a returned task (Draconis
//! §4.3, §8.3). Against an overloaded or silent scheduler every pending
//! task times out at once, and a client without a budget multiplies its own
//! load exactly when there is none to spare, crowding out other
//! applications at a shared scheduler. The budget is the same idea as
//! Finagle's and gRPC's retry budgets: a retry the budget cannot pay for
//! waits until it can (the task stays pending; its attempts and timeouts
//! are unchanged), so nothing is lost, only delayed.
//!
//! Integer arithmetic on milli-tokens (one retry costs 1,000), so a driver
//! replaying the same clock gets the same decisions.

/// Milli-tokens one retry costs.
const TOKEN: u64 = 1_000;

/// The budget's parameters and its state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryBudget {
    /// Milli-tokens each first send deposits (`ratio` × 1,000).
    per_send: u64,
    /// Tokens refilled per second whatever the sends.
    min_per_s: u64,
    /// At most this many milli-tokens are kept.
    cap: u64,
    /// Milli-tokens now.
    balance: u64,
    /// The clock, ns, up to which the refill was counted.
    refilled_at: u64,
}

impl RetryBudget {
    /// At most `ratio` retries per first send plus `min_per_s` retries a
    /// second, and at most `burst` (at least 1) retries saved up. It starts
    /// with one second's reserve, `min_per_s` (at most `burst`).
    pub fn new(ratio: f64, min_per_s: u32, burst: u32) -> Self {
        let cap = u64::from(burst.max(1)) * TOKEN;
        RetryBudget {
            per_send: (ratio.clamp(0.0, 1_000.0) * TOKEN as f64).round() as u64,
            min_per_s: u64::from(min_per_s),
            cap,
            balance: (u64::from(min_per_s) * TOKEN).min(cap),
            refilled_at: 0,
        }
    }

    /// A first send: it earns the retries `ratio` allows.
    pub fn deposit(&mut self) {
        self.balance = (self.balance + self.per_send).min(self.cap);
    }

    /// Adds the time-based refill up to `now` (ns), keeping the remainder
    /// of a milli-token so that many small steps add up as one long one.
    fn refill(&mut self, now: u64) {
        if now <= self.refilled_at {
            return;
        }
        if self.min_per_s == 0 {
            self.refilled_at = now;
            return;
        }
        // min_per_s tokens a second = min_per_s milli-tokens per ms.
        let units = (now - self.refilled_at).saturating_mul(self.min_per_s);
        let earned = units / 1_000_000;
        self.balance = self.balance.saturating_add(earned).min(self.cap);
        self.refilled_at = now - (units % 1_000_000) / self.min_per_s;
    }

    /// Pays for one retry at `now` if the budget allows it.
    pub fn try_withdraw(&mut self, now: u64) -> bool {
        self.refill(now);
        if self.balance >= TOKEN {
            self.balance -= TOKEN;
            true
        } else {
            false
        }
    }

    /// When the refill alone pays for the next retry (`now` if it is paid
    /// for already); `u64::MAX` without a refill (`min_per_s` 0).
    pub fn next_token_at(&mut self, now: u64) -> u64 {
        self.refill(now);
        if self.balance >= TOKEN {
            return now;
        }
        if self.min_per_s == 0 {
            return u64::MAX;
        }
        let missing = TOKEN - self.balance;
        // Each ns adds min_per_s / 1e6 milli-tokens; round up.
        let ns = (missing * 1_000_000).div_ceil(self.min_per_s);
        self.refilled_at.saturating_add(ns).max(now + 1)
    }

    /// Retries paid for now (whole tokens).
    pub fn available(&mut self, now: u64) -> u64 {
        self.refill(now);
        self.balance / TOKEN
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn sends_earn_a_fraction_of_a_retry_each() {
        let mut b = RetryBudget::new(0.2, 0, 100);
        assert!(!b.try_withdraw(0), "no reserve without a refill");
        for _ in 0..10 {
            b.deposit();
        }
        assert_eq!(b.available(0), 2);
        assert!(b.try_withdraw(0) && b.try_withdraw(0));
        assert!(!b.try_withdraw(0));
        assert_eq!(b.next_token_at(5), u64::MAX);
    }

    #[test]
    fn the_refill_pays_min_per_s_retries_a_second() {
        let mut b = RetryBudget::new(0.0, 10, 1_000);
        assert_eq!(b.available(0), 10, "one second's reserve");
        for _ in 0..10 {
            assert!(b.try_withdraw(0));
        }
        assert!(!b.try_withdraw(0));
        // One token every 100 ms.
        assert_eq!(b.next_token_at(0), S / 10);
        assert!(!b.try_withdraw(S / 10 - 1));
        assert!(b.try_withdraw(S / 10));
        assert_eq!(b.available(2 * S), 19);
    }

    #[test]
    fn savings_stop_at_the_burst() {
        let mut b = RetryBudget::new(1.0, 100, 5);
        for _ in 0..100 {
            b.deposit();
        }
        assert_eq!(b.available(100 * S), 5);
    }

    proptest! {
        /// Over any schedule of sends and retry attempts, the retries paid
        /// for never exceed what was earned: the reserve, `ratio` of the
        /// sends and `min_per_s` per second elapsed.
        #[test]
        fn retries_never_exceed_what_was_earned(
            ratio_pct in 0u32..100,
            min_per_s in 0u32..50,
            steps in proptest::collection::vec((0u64..200_000_000, any::<bool>()), 1..300),
        ) {
            let ratio = f64::from(ratio_pct) / 100.0;
            let mut b = RetryBudget::new(ratio, min_per_s, 1_000_000);
            let (mut now, mut sends, mut paid) = (0u64, 0u64, 0u64);
            for (gap, is_send) in steps {
                now += gap;
                if is_send {
                    b.deposit();
                    sends += 1;
                } else if b.try_withdraw(now) {
                    paid += 1;
                }
                let earned_milli = u64::from(min_per_s) * TOKEN
                    + sends * u64::from(ratio_pct) * 10
                    + now.saturating_mul(u64::from(min_per_s)) / 1_000_000;
                prop_assert!(paid * TOKEN <= earned_milli, "paid {} earned {}", paid, earned_milli);
            }
        }

        /// `next_token_at` is exact: a retry fails just before it and
        /// succeeds at it.
        #[test]
        fn next_token_at_is_when_the_retry_is_paid(min_per_s in 1u32..10_000, start in 0u64..S) {
            let mut b = RetryBudget::new(0.0, min_per_s, 1);
            while b.try_withdraw(start) {}
            let at = b.next_token_at(start);
            prop_assert!(at > start);
            let mut early = b;
            prop_assert!(!early.try_withdraw(at - 1));
            prop_assert!(b.try_withdraw(at));
        }
    }
}
