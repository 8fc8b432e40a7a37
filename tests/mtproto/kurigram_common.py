"""What the Kurigram scripts share: a client pointed at the test server (its address, port and
RSA key from the command line and `GET /v1/mtproto/public-key`), sign-up-or-in with the
development code, `check` and `wait_for`.

The scripts take `HTTP_BASE MTPROTO_HOST MTPROTO_PORT PHONE_PREFIX ...` as arguments.
"""

import asyncio
import json
import sys
import tempfile
import urllib.request
from pathlib import Path

import pyrogram
from pyrogram import Client, raw
from pyrogram.crypto import rsa
from pyrogram.storage import SQLiteStorage

HTTP, HOST, PORT, PREFIX = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
CODE = '12345'
# Generous: in a busy suite the relay decodes every test's WAL, so a push can lag by seconds.
TIMEOUT = 60


def check(name, ok, detail=''):
    if not ok:
        raise AssertionError(f'{name} failed {detail}')
    print(f'CHECK {name}', flush=True)


class LocalServer(SQLiteStorage):
    """In-memory storage that points the client at the test server instead of Telegram's DC 2."""

    async def server_address(self, value=object):
        return HOST if value is object else await super().server_address(value)

    async def port(self, value=object):
        return PORT if value is object else await super().port(value)


def trust_server_key():
    info = json.load(urllib.request.urlopen(f'{HTTP}/v1/mtproto/public-key'))
    # Kurigram keeps its servers' keys as (modulus, exponent) pairs keyed by fingerprint.
    rsa.server_public_keys[info['fingerprint']] = rsa.PublicKey(
        int(info['modulus_hex'], 16), int(info['exponent_hex'], 16))


def client(name):
    storage = LocalServer(name, workdir=Path(tempfile.gettempdir()), in_memory=True)
    return Client(name, api_id=1, api_hash='0' * 32, storage_engine=storage, no_updates=False)


async def sign_in(c, phone, first_name):
    await c.connect()
    sent = await c.send_code(phone)
    user = await c.sign_in(phone, sent.phone_code_hash, CODE)
    if not isinstance(user, pyrogram.types.User):
        user = await c.sign_up(phone, sent.phone_code_hash, first_name)
    await c.initialize()
    return user


async def resolve(c, phone):
    """The user with `phone`, known to `c` (its access hash in `c`'s peer storage)."""
    return (await c.invoke(raw.functions.contacts.ResolvePhone(phone=phone))).users[0]


async def wait_for(pred, what):
    for _ in range(TIMEOUT * 10):
        if pred():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f'timed out waiting for {what}')
