# Prints the SRP test vector of domain/src/srp.rs (tests::TV_*) from Telethon 1.45.0's own
# client code: telethon.password.compute_digest (the verifier v a client sends when it sets a
# password) and compute_check (A and M1 for a check), with os.urandom fixed. B is computed here
# from the documented formula B = (k*v + g^b) mod p, k = H(p | g).
# Run: target/mtproto-venv/bin/python tests/mtproto/srp_vector.py
import hashlib
import re
import inspect

import telethon.password as pw
from telethon.tl import types

# Telegram's prime as Telethon knows it (the literal in check_prime_and_good).
P = bytes(int(h, 16) for h in re.findall(r'0x([0-9A-F]{2})', inspect.getsource(pw.check_prime_and_good)))
assert len(P) == 256
salt1 = bytes(range(1, 41))
salt2 = bytes(range(0xA0, 0xB0))
algo = types.PasswordKdfAlgoSHA256SHA256PBKDF2HMACSHA512iter100000SHA256ModPow(
    salt1=salt1, salt2=salt2, g=3, p=P)
v = pw.compute_digest(algo, 'pw1')
b = hashlib.sha512(b'server b').digest() * 4
p = int.from_bytes(P, 'big')
k = int.from_bytes(hashlib.sha256(P + (3).to_bytes(256, 'big')).digest(), 'big')
B = ((k * int.from_bytes(v, 'big') + pow(3, int.from_bytes(b, 'big'), p)) % p).to_bytes(256, 'big')
a = hashlib.sha512(b'client a').digest() * 4
pw.os.urandom = lambda n: a[:n]
request = types.account.Password(
    new_algo=types.PasswordKdfAlgoUnknown(), new_secure_algo=types.SecurePasswordKdfAlgoUnknown(),
    secure_random=b'', has_password=True, current_algo=algo, srp_B=B, srp_id=1)
check = pw.compute_check(request, 'pw1')
for name, value in [('v', v), ('b', b), ('B', B), ('A', check.A), ('M1', check.M1)]:
    print(name, value.hex())
