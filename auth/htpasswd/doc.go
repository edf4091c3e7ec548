// Package htpasswd reads the password files of Pulsar's basic
// authentication provider (basicAuthConf) and checks passwords against
// their hashes. It does no I/O: callers pass the file's bytes.
//
// # File
//
// One "user:hash" per line. Pulsar's AuthenticationProviderBasic splits
// each line on ':' and needs exactly two parts; Magnetar does the same,
// and also skips blank lines and lines starting with '#' (Pulsar would
// refuse them). A hash in a form no scheme below recognises is an error
// naming the line, so a typo does not lock a user out silently.
//
// # Schemes
//
// Pulsar's provider (commons-codec underneath) accepts exactly two forms;
// Magnetar accepts those and bcrypt:
//
//	apr1    $apr1$<salt>$<22 chars>   Apache's MD5-crypt variant (htpasswd -m,
//	                                  openssl passwd -apr1). Salt: 1..8 chars of
//	                                  the crypt alphabet. Pulsar: "starts with $apr1".
//	crypt   <2 salt chars><11 chars>  traditional DES crypt(3) (htpasswd -d).
//	                                  Pulsar: any other hash, salt = its first two
//	                                  characters. Only the first 8 bytes of a
//	                                  password count.
//	bcrypt  $2a$, $2b$ or $2y$        htpasswd -B; Magnetar only (Pulsar's provider
//	                                  cannot check it).
//
// The crypt alphabet is "./0-9A-Za-z" (value 0..63 in that order).
//
// # APR1-MD5 (Poul-Henning Kamp's md5crypt with the magic "$apr1$")
//
//	A = MD5(pw + "$apr1$" + salt)  fed further:
//	    MD5(pw + salt + pw), repeated to len(pw) bytes;
//	    for each bit of len(pw), low bit first: a zero byte if the bit is
//	    1, else pw[0]
//	1000 rounds i: MD5 of (i odd ? pw : A), then salt if i%3 != 0, then
//	    pw if i%7 != 0, then (i odd ? A : pw); A = that digest
//	output: the digest bytes in the groups (0,6,12) (1,7,13) (2,8,14)
//	    (3,9,15) (4,10,5) as 24-bit numbers, then byte 11, each written
//	    6 bits at a time, low bits first, in the crypt alphabet (22 chars).
//
// # DES crypt (Unix V7 crypt(3), FIPS 46 DES)
//
// The key is the first 8 password bytes, each shifted left one bit
// (zero-padded). The two salt characters give 12 bits (first character
// bits 0..5, second 6..11); salt bit b swaps bits b and b+24 of every E
// expansion. A zero block is encrypted 25 times with that DES; the 64
// result bits, padded with two zero bits, are written 6 bits at a time,
// high bits first, in the crypt alphabet after the salt (13 chars).
//
// # Strength
//
// APR1-MD5 and DES crypt are fast, so a stolen file is easy to attack,
// and crypt ignores everything past 8 characters. Weak reports them so
// the broker can warn at start-up; bcrypt is the recommended form.
package htpasswd
