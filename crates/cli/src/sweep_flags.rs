//! `--policy` and `--load`, shared by `netsched sim` and `netsched pull`: given
//! on the command line, each replaces its list of the config's sweep.

/// Replaces `policies` by the parsed `policy_flags` and `loads` by
/// `load_flags`, each only when given; the first name `parse` refuses is the
/// error.
pub fn override_sweep<P, E>(
    policies: &mut Vec<P>,
    loads: &mut Vec<f64>,
    policy_flags: &[String],
    load_flags: &[f64],
    parse: impl Fn(&str) -> Result<P, E>,
) -> Result<(), E> {
    if !policy_flags.is_empty() {
        *policies = policy_flags
            .iter()
            .map(|p| parse(p))
            .collect::<Result<_, _>>()?;
    }
    if !load_flags.is_empty() {
        *loads = load_flags.to_vec();
    }
    Ok(())
}
