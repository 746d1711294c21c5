"""Key generation for the ssh plugin: the one helper in core/ that is not pure (it draws
randomness), kept apart so the shell calls it and passes the pair to `ssh.objects`.

2048-bit RSA like Volcano: the private key as PKCS#1 PEM ("RSA PRIVATE KEY"), the public key in
authorized_keys format ("ssh-rsa AAAA...\\n").
"""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from services.controller.core.plugins.ssh import KeyPair


def generate_key_pair(bits: int = 2048) -> KeyPair:
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return KeyPair(private.decode(), public.decode() + "\n")
