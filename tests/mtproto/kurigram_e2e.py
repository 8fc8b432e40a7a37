"""A second real client: Kurigram (a maintained Pyrogram fork) against a ptslog server
(tests/integration/mtproto.rs). Two new accounts sign up and in with the development code, resolve
each other by phone, and exchange messages that arrive live through Kurigram's own handlers.
Prints `CHECK <name>` per passed check and `E2E OK kurigram`; any failure raises.

usage: kurigram_e2e.py HTTP_BASE MTPROTO_HOST MTPROTO_PORT PHONE_PREFIX
"""

import asyncio
import json
import sys
import tempfile
import urllib.request
from pathlib import Path

import pyrogram
from pyrogram import Client, filters, raw
from pyrogram.crypto import rsa
from pyrogram.handlers import MessageHandler
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


async def wait_for(pred, what):
    for _ in range(TIMEOUT * 10):
        if pred():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f'timed out waiting for {what}')


async def main():
    info = json.load(urllib.request.urlopen(f'{HTTP}/v1/mtproto/public-key'))
    # Kurigram keeps its servers' keys as (modulus, exponent) pairs keyed by fingerprint.
    rsa.server_public_keys[info['fingerprint']] = rsa.PublicKey(
        int(info['modulus_hex'], 16), int(info['exponent_hex'], 16))

    carol_phone, dave_phone = f'+{PREFIX}1', f'+{PREFIX}2'
    c, d = client('carol'), client('dave')
    carol = await sign_in(c, carol_phone, 'Carol')
    dave = await sign_in(d, dave_phone, 'Dave')
    check('sign_up_and_in', carol.first_name == 'Carol' and dave.first_name == 'Dave')
    me = await c.get_me()
    check('get_me', me.id == carol.id)

    got_d, got_c = [], []

    async def on_d(_, m):
        got_d.append(m)

    async def on_c(_, m):
        got_c.append(m)

    d.add_handler(MessageHandler(on_d, filters.incoming))
    c.add_handler(MessageHandler(on_c, filters.incoming))

    r = await c.invoke(raw.functions.contacts.ResolvePhone(phone=dave_phone))
    check('resolve_phone', r.users[0].id == dave.id)
    r = await d.invoke(raw.functions.contacts.ResolvePhone(phone=carol_phone))
    check('resolve_phone_back', r.users[0].id == carol.id)

    sent = await c.send_message(dave.id, 'hello dave')
    check('send', sent.text == 'hello dave')
    await wait_for(lambda: got_d, 'Dave to get the message live')
    check('live_receive', got_d[0].text == 'hello dave' and got_d[0].from_user.id == carol.id)
    await d.send_message(carol.id, 'hi carol')
    await wait_for(lambda: got_c, 'Carol to get the reply live')
    check('live_reply', got_c[0].text == 'hi carol')
    history = [m.text async for m in d.get_chat_history(carol.id, limit=10)]
    check('history', history == ['hi carol', 'hello dave'], history)

    for x in (c, d):
        await x.stop() if x.is_initialized else await x.disconnect()
    print('E2E OK kurigram', flush=True)


asyncio.run(main())
