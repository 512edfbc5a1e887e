//! What an address is, for the SSRF guard: its class (public, private or never a destination)
//! after any IPv4 address an IPv6 form embeds is taken out, and the address ranges (`ipnet`)
//! the rules and the operator's allowlist are written in. Pure functions, no network.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// An address range (an [`ipnet::IpNet`]; a bare address is a one-address range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr(IpNet);

/// The widest operator-allowed range: no wider than the widest private range the guard knows
/// (10.0.0.0/8, fc00::/7), so the allowlist opens a network, never the whole address space.
const MIN_ALLOWED_PREFIX: (u8, u8) = (8, 7);

impl Cidr {
    pub fn parse(text: &str) -> Option<Cidr> {
        let text = text.trim();
        match text.parse::<IpNet>() {
            Ok(net) => Some(Cidr(net)),
            Err(_) => text
                .parse::<IpAddr>()
                .ok()
                .map(|address| Cidr(address.into())),
        }
    }

    pub fn contains(&self, address: IpAddr) -> bool {
        self.0.contains(&address)
    }

    /// Parses the operator allowlist (`FORGEBENCH_PUSH_ALLOWED_CIDRS`), comma-separated; on
    /// error, says which entry and why: not a range, or wider than /8 (IPv4) or /7 (IPv6), such
    /// as `0.0.0.0/0`.
    pub fn parse_list(text: &str) -> Result<Vec<Cidr>, String> {
        text.split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                let cidr = Cidr::parse(entry).ok_or_else(|| format!("{entry:?} is not a range"))?;
                let widest = match cidr.0 {
                    IpNet::V4(_) => MIN_ALLOWED_PREFIX.0,
                    IpNet::V6(_) => MIN_ALLOWED_PREFIX.1,
                };
                if cidr.0.prefix_len() < widest {
                    return Err(format!(
                        "{entry:?} is wider than /{widest}; allow a network, not the address space"
                    ));
                }
                Ok(cidr)
            })
            .collect()
    }
}

/// What kind of destination an address is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    Public,
    Private,
    /// Never a push destination; the text says what it is.
    Blocked(&'static str),
}

/// The IPv4 address an IPv6 address stands for, if it embeds one.
fn embedded_ipv4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = address.to_ipv4_mapped() {
        return Some(v4);
    }
    let bits = u128::from(address);
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    let segments = address.segments();
    // IPv4-translated ::ffff:0:a.b.c.d (RFC 2765, SIIT).
    if segments[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return Some(low32);
    }
    // NAT64 well-known prefix 64:ff9b::/96.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low32);
    }
    // 6to4 2002:AABB:CCDD::/48 carries AA.BB.CC.DD.
    if segments[0] == 0x2002 {
        return Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32));
    }
    // Deprecated IPv4-compatible ::a.b.c.d (but not :: or ::1).
    if segments[..6] == [0, 0, 0, 0, 0, 0] && bits > 1 {
        return Some(low32);
    }
    None
}

fn in_any(address: IpAddr, ranges: &[&str]) -> bool {
    ranges
        .iter()
        .filter_map(|range| Cidr::parse(range))
        .any(|cidr| cidr.contains(address))
}

const METADATA: [&str; 3] = [
    "169.254.169.254/32",
    "100.100.100.200/32",
    "fd00:ec2::254/128",
];

/// The address an address stands for: the IPv4 address inside an IPv6 form that embeds one,
/// else itself. Every check judges this form.
pub fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => embedded_ipv4(v6).map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// Whether an address is (or embeds) a cloud metadata address: refused whatever else allows it.
pub fn is_metadata(address: IpAddr) -> bool {
    in_any(canonical(address), &METADATA)
}

/// Classifies an address after canonicalising IPv6 forms that embed an IPv4 address.
pub fn classify(address: IpAddr) -> AddressClass {
    let address = canonical(address);
    if in_any(address, &METADATA) {
        return AddressClass::Blocked("a cloud metadata address");
    }
    match address {
        IpAddr::V4(v4) => {
            if v4.is_loopback() {
                AddressClass::Blocked("a loopback address")
            } else if in_any(address, &["0.0.0.0/8"]) {
                AddressClass::Blocked("an unspecified address")
            } else if v4.is_link_local() {
                AddressClass::Blocked("a link-local address")
            } else if v4.is_multicast() || v4.is_broadcast() || in_any(address, &["240.0.0.0/4"]) {
                AddressClass::Blocked("a multicast, broadcast or reserved address")
            } else if in_any(
                address,
                &[
                    "192.0.0.0/24",
                    "192.0.2.0/24",
                    "198.51.100.0/24",
                    "203.0.113.0/24",
                    "198.18.0.0/15",
                ],
            ) {
                AddressClass::Blocked("a special-purpose address")
            } else if v4.is_private() || in_any(address, &["100.64.0.0/10"]) {
                AddressClass::Private
            } else {
                AddressClass::Public
            }
        }
        IpAddr::V6(v6) => {
            if v6.is_loopback() {
                AddressClass::Blocked("a loopback address")
            } else if v6.is_unspecified() {
                AddressClass::Blocked("an unspecified address")
            } else if in_any(address, &["fe80::/10"]) {
                AddressClass::Blocked("a link-local address")
            } else if v6.is_multicast() {
                AddressClass::Blocked("a multicast address")
            } else if in_any(
                address,
                &[
                    "2001::/32",
                    "2001:db8::/32",
                    "100::/64",
                    "64:ff9b:1::/48",
                    "::/96",
                ],
            ) {
                AddressClass::Blocked("a special-purpose address")
            } else if in_any(address, &["fc00::/7", "fec0::/10"]) {
                AddressClass::Private
            } else {
                AddressClass::Public
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AddressClass::{Private, Public};
    use super::*;

    const LOOPBACK: AddressClass = AddressClass::Blocked("a loopback address");
    const UNSPECIFIED: AddressClass = AddressClass::Blocked("an unspecified address");
    const LINK_LOCAL: AddressClass = AddressClass::Blocked("a link-local address");
    const RESERVED: AddressClass =
        AddressClass::Blocked("a multicast, broadcast or reserved address");
    const MULTICAST: AddressClass = AddressClass::Blocked("a multicast address");
    const SPECIAL: AddressClass = AddressClass::Blocked("a special-purpose address");
    const METADATA_ADDRESS: AddressClass = AddressClass::Blocked("a cloud metadata address");

    fn address(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn assert_classes(table: &[(&str, AddressClass)]) {
        for (text, class) in table {
            assert_eq!(classify(address(text)), *class, "{text}");
        }
    }

    #[test]
    fn every_ipv4_range_is_classified_at_its_edges() {
        assert_classes(&[
            ("0.0.0.0", UNSPECIFIED),
            ("0.255.255.255", UNSPECIFIED),
            ("1.0.0.0", Public),
            ("8.8.8.8", Public),
            ("9.255.255.255", Public),
            ("10.0.0.0", Private),
            ("10.255.255.255", Private),
            ("11.0.0.0", Public),
            ("100.63.255.255", Public),
            ("100.64.0.0", Private),
            ("100.100.100.200", METADATA_ADDRESS),
            ("100.127.255.255", Private),
            ("100.128.0.0", Public),
            ("126.255.255.255", Public),
            ("127.0.0.0", LOOPBACK),
            ("127.0.0.1", LOOPBACK),
            ("127.255.255.255", LOOPBACK),
            ("128.0.0.0", Public),
            ("169.253.255.255", Public),
            ("169.254.0.0", LINK_LOCAL),
            ("169.254.169.254", METADATA_ADDRESS),
            ("169.254.255.255", LINK_LOCAL),
            ("169.255.0.0", Public),
            ("172.15.255.255", Public),
            ("172.16.0.0", Private),
            ("172.31.255.255", Private),
            ("172.32.0.0", Public),
            ("191.255.255.255", Public),
            ("192.0.0.0", SPECIAL),
            ("192.0.0.255", SPECIAL),
            ("192.0.1.0", Public),
            ("192.0.2.0", SPECIAL),
            ("192.0.2.255", SPECIAL),
            ("192.0.3.0", Public),
            ("192.167.255.255", Public),
            ("192.168.0.0", Private),
            ("192.168.255.255", Private),
            ("192.169.0.0", Public),
            ("198.17.255.255", Public),
            ("198.18.0.0", SPECIAL),
            ("198.19.255.255", SPECIAL),
            ("198.20.0.0", Public),
            ("198.51.100.0", SPECIAL),
            ("198.51.100.255", SPECIAL),
            ("198.51.101.0", Public),
            ("203.0.112.255", Public),
            ("203.0.113.0", SPECIAL),
            ("203.0.113.255", SPECIAL),
            ("203.0.114.0", Public),
            ("223.255.255.255", Public),
            ("224.0.0.0", RESERVED),
            ("239.255.255.255", RESERVED),
            ("240.0.0.0", RESERVED),
            ("255.255.255.254", RESERVED),
            ("255.255.255.255", RESERVED),
        ]);
    }

    #[test]
    fn every_ipv6_range_is_classified_at_its_edges() {
        assert_classes(&[
            ("::", UNSPECIFIED),
            ("::1", LOOPBACK),
            ("100::", SPECIAL),
            ("100::ffff:ffff:ffff:ffff", SPECIAL),
            ("64:ff9b:1::", SPECIAL),
            ("64:ff9b:1:ffff:ffff:ffff:ffff:ffff", SPECIAL),
            ("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Public),
            ("2001::", SPECIAL),
            ("2001:0:ffff:ffff:ffff:ffff:ffff:ffff", SPECIAL),
            ("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", Public),
            ("2001:db8::", SPECIAL),
            ("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", SPECIAL),
            ("2001:db9::", Public),
            ("2001:4860:4860::8888", Public),
            ("2606:4700:4700::1111", Public),
            ("fc00::", Private),
            ("fd00:ec2::253", Private),
            ("fd00:ec2::254", METADATA_ADDRESS),
            ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Private),
            ("fe80::", LINK_LOCAL),
            ("fe80::1", LINK_LOCAL),
            ("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", LINK_LOCAL),
            ("fec0::", Private),
            ("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", Private),
            ("ff00::", MULTICAST),
            ("ff02::1", MULTICAST),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", MULTICAST),
        ]);
    }

    /// Each IPv6 form that embeds an IPv4 address is judged as that address, whatever it is.
    #[test]
    fn ipv6_forms_that_embed_an_ipv4_address_are_judged_by_it() {
        assert_classes(&[
            // IPv4-mapped ::ffff:0:0/96.
            ("::ffff:0.0.0.0", UNSPECIFIED),
            ("::ffff:127.0.0.1", LOOPBACK),
            ("::ffff:169.254.169.254", METADATA_ADDRESS),
            ("::ffff:169.254.1.1", LINK_LOCAL),
            ("::ffff:10.1.2.3", Private),
            ("::ffff:255.255.255.255", RESERVED),
            ("::ffff:93.184.216.34", Public),
            // IPv4-translated ::ffff:0:0:0/96.
            ("::ffff:0:7f00:1", LOOPBACK),
            ("::ffff:0:169.254.169.254", METADATA_ADDRESS),
            ("::ffff:0:10.1.2.3", Private),
            ("::ffff:0:93.184.216.34", Public),
            // IPv4-compatible ::/96, apart from :: and ::1.
            ("::0.0.0.2", UNSPECIFIED),
            ("::127.0.0.1", LOOPBACK),
            ("::192.168.1.1", Private),
            ("::8.8.8.8", Public),
            // NAT64 64:ff9b::/96.
            ("64:ff9b::7f00:1", LOOPBACK),
            ("64:ff9b::a9fe:a9fe", METADATA_ADDRESS),
            ("64:ff9b::c0a8:101", Private),
            ("64:ff9b::808:808", Public),
            // 6to4 2002::/16, the IPv4 address in bits 16 to 48.
            ("2002:7f00:1::", LOOPBACK),
            ("2002:a9fe:a9fe::1", METADATA_ADDRESS),
            ("2002:a00:1:ffff::1", Private),
            ("2002:c000:201::", SPECIAL),
            ("2002:808:808::", Public),
        ]);
        for (v6, v4) in [
            ("::ffff:127.0.0.1", "127.0.0.1"),
            ("::ffff:0:7f00:1", "127.0.0.1"),
            ("::7f00:1", "127.0.0.1"),
            ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
            ("2002:a00:1::", "10.0.0.1"),
            // Nothing embedded: itself.
            ("::", "::"),
            ("::1", "::1"),
            ("64:ff9b:1::7f00:1", "64:ff9b:1::7f00:1"),
            ("2001::7f00:1", "2001::7f00:1"),
            ("10.0.0.1", "10.0.0.1"),
        ] {
            assert_eq!(canonical(address(v6)), address(v4), "{v6}");
        }
    }

    #[test]
    fn the_allowlist_refuses_whole_space_ranges() {
        for wide in [
            "0.0.0.0/0",
            "::/0",
            "0.0.0.0/1",
            "128.0.0.0/2",
            "10.0.0.0/7",
            "::/6",
        ] {
            let why = Cidr::parse_list(&format!("127.0.0.0/8,{wide}")).unwrap_err();
            assert!(why.contains(wide), "{wide}: {why}");
        }
        assert!(Cidr::parse_list("nonsense").is_err());
        let allowed = Cidr::parse_list("127.0.0.0/8, fc00::/7, 192.168.1.10").unwrap();
        assert_eq!(allowed.len(), 3);
        assert!(allowed[2].contains(address("192.168.1.10")));
        assert!(!allowed[2].contains(address("192.168.1.11")));
    }
}
