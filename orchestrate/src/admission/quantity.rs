//! Kubernetes quantities (`50m`, `0.5`, `64Mi`, `1G`, `129e6`) read as whole milli-units, and written back in the
//! form a person reads (`50m`, `64Mi`): what the LimitRanges and ResourceQuotas of a namespace say, compared with what
//! the probe asks. Only what resource quantities use is read; anything else is `None` (and then not compared).

/// A quantity in milli-units (a cpu of `50m` is 50; a memory of `1Ki` is 1,024,000), rounded up as the API server
/// rounds a request it stores: never below what was written.
pub fn milli(text: &str) -> Option<u128> {
    let text = text.trim();
    if text.is_empty() || text.len() > 64 {
        return None;
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number = number.strip_prefix('+').unwrap_or(number);
    if number.starts_with('-') || number.is_empty() {
        return None;
    }
    // The number as an integer and a count of decimal places.
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && frac.is_empty() {
        return None;
    }
    let digits = format!("{whole}{frac}");
    if !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 30 {
        return None;
    }
    let mantissa: u128 = digits.parse().ok()?;
    // value = mantissa / 10^places * multiplier; kept as num / den.
    let mut num = mantissa.checked_mul(1000)?;
    let mut den: u128 = 10u128.checked_pow(u32::try_from(frac.len()).ok()?)?;
    let binary = |p: u32| 1024u128.checked_pow(p);
    let decimal = |p: u32| 1000u128.checked_pow(p);
    match suffix {
        "" => {}
        "n" => den = den.checked_mul(1_000_000_000)?,
        "u" => den = den.checked_mul(1_000_000)?,
        "m" => den = den.checked_mul(1000)?,
        "k" => num = num.checked_mul(decimal(1)?)?,
        "M" => num = num.checked_mul(decimal(2)?)?,
        "G" => num = num.checked_mul(decimal(3)?)?,
        "T" => num = num.checked_mul(decimal(4)?)?,
        "P" => num = num.checked_mul(decimal(5)?)?,
        "E" => num = num.checked_mul(decimal(6)?)?,
        "Ki" => num = num.checked_mul(binary(1)?)?,
        "Mi" => num = num.checked_mul(binary(2)?)?,
        "Gi" => num = num.checked_mul(binary(3)?)?,
        "Ti" => num = num.checked_mul(binary(4)?)?,
        "Pi" => num = num.checked_mul(binary(5)?)?,
        "Ei" => num = num.checked_mul(binary(6)?)?,
        e => {
            // Decimal exponent: `e6`, `E-3`.
            let exp: i32 = e.strip_prefix(['e', 'E'])?.parse().ok()?;
            let p = 10u128.checked_pow(exp.unsigned_abs())?;
            if exp >= 0 {
                num = num.checked_mul(p)?;
            } else {
                den = den.checked_mul(p)?;
            }
        }
    }
    Some(num.div_ceil(den))
}

/// A cpu in milli-units, as kubectl writes it: `50m`, `1` (whole cores), `1500m`.
pub fn cpu(milli: u128) -> String {
    if milli.is_multiple_of(1000) && milli > 0 {
        format!("{}", milli / 1000)
    } else {
        format!("{milli}m")
    }
}

/// A size in milli-units (of bytes), as a person writes it: `64Mi`, `1Gi`, else whole bytes (rounded up).
pub fn bytes(milli: u128) -> String {
    let b = milli.div_ceil(1000);
    for (suffix, unit) in [("Gi", 1u128 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
        if b > 0 && b.is_multiple_of(unit) {
            return format!("{}{suffix}", b / unit);
        }
    }
    format!("{b}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_the_api_server_reads_them() {
        assert_eq!(milli("50m"), Some(50));
        assert_eq!(milli("0.5"), Some(500));
        assert_eq!(milli("1"), Some(1000));
        assert_eq!(milli("1.5"), Some(1500));
        assert_eq!(milli("+2"), Some(2000));
        assert_eq!(milli("100u"), Some(1), "rounded up, never below");
        assert_eq!(milli("64Mi"), Some(64 * 1024 * 1024 * 1000));
        assert_eq!(milli("1G"), Some(1_000_000_000_000));
        assert_eq!(milli("129e6"), Some(129_000_000_000));
        assert_eq!(milli("1E-3"), Some(1));
        assert_eq!(milli(".5Gi"), Some(512 * 1024 * 1024 * 1000));
        for bad in ["", "-1", "1x", "Mi", "1..2", "1e", "1e999", "."] {
            assert_eq!(milli(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn quantities_write_as_a_person_reads_them() {
        assert_eq!(cpu(50), "50m");
        assert_eq!(cpu(1000), "1");
        assert_eq!(cpu(1500), "1500m");
        assert_eq!(bytes(milli("64Mi").unwrap()), "64Mi");
        assert_eq!(bytes(milli("1Gi").unwrap()), "1Gi");
        assert_eq!(bytes(milli("1536Ki").unwrap()), "1536Ki");
        assert_eq!(bytes(milli("100M").unwrap()), "100000000");
        assert_eq!(bytes(1), "1");
    }
}
