//! Basic NIC duties on IPv4/Ethernet: parsing and validation, ARP, ICMP echo, checksum fill
//! and software TSO for host-originated packets.
