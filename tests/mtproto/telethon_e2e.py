"""End-to-end run of a real Telethon client against a ptslog server (tests/integration/mtproto.rs).

Two accounts sign in with the development code, resolve each other, exchange messages, edit,
delete and read, each seeing the other's changes live through Telethon's own update handling; a
second device of the first account, offline meanwhile, catches up and sees the same dialogs and
history. Prints one `CHECK <name>` line per passed check and `E2E OK` at the end; any failure
raises (non-zero exit).

usage: telethon_e2e.py HTTP_BASE MTPROTO_HOST MTPROTO_PORT TRANSPORT PHONE_PREFIX
       telethon_e2e.py HTTP_BASE MTPROTO_HOST MTPROTO_PORT TRANSPORT reconnect SESSION
The first form ends by printing `SESSION <string>`: Bob's device (its auth key), still signed in.
The second reconnects with it (e.g. after a server restart) and checks it is still Bob.
"""

import asyncio
import json
import sys
import urllib.request

from telethon import TelegramClient, errors, events, functions, types
from telethon.crypto import rsa
from telethon.network import (ConnectionTcpAbridged, ConnectionTcpFull,
                              ConnectionTcpIntermediate, ConnectionTcpObfuscated)
from telethon.sessions import MemorySession, StringSession

HTTP, HOST, PORT, TRANSPORT, PREFIX = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
CODE = '12345'
# Generous: in a busy suite the relay decodes every test's WAL, so a push can lag by seconds.
TIMEOUT = 60

CONNECTIONS = {
    'abridged': ConnectionTcpAbridged,
    'intermediate': ConnectionTcpIntermediate,
    'full': ConnectionTcpFull,
    'obfuscated': ConnectionTcpObfuscated,
}


def collect(into, get):
    async def handler(event):
        into.append(get(event))
    return handler


def watch_gaps(c):
    """Records the gaps Telethon's message box finds and the getDifference calls it wants."""
    box = c._message_box
    gaps, diffs = [], []
    base = type(box)

    # MessageBox has __slots__: its methods are overridden by a layout-compatible subclass.
    class Watched(base):
        __slots__ = ()

        def process_updates(self, *args, **kwargs):
            try:
                return base.process_updates(self, *args, **kwargs)
            finally:
                if self.possible_gaps:
                    gaps.append({k: [type(u).__name__ for u in g.updates]
                                 for k, g in self.possible_gaps.items()})

        def get_difference(self):
            request = base.get_difference(self)
            if request is not None:
                diffs.append(request.pts)
            return request

    box.__class__ = Watched
    return gaps, diffs


def check(name, ok, detail=''):
    if not ok:
        raise AssertionError(f'{name} failed {detail}')
    print(f'CHECK {name}', flush=True)


def client(catch_up=False):
    session = MemorySession()
    session.set_dc(2, HOST, PORT)
    # catch_up: on connect, resume from the update state saved in the session at disconnect.
    return TelegramClient(session, api_id=1, api_hash='0' * 32, catch_up=catch_up,
                          connection=CONNECTIONS[TRANSPORT], receive_updates=True,
                          request_retries=2, connection_retries=2, timeout=TIMEOUT)


async def sign_in(c, phone, first_name):
    await c.connect()
    sent = await c.send_code_request(phone)
    try:
        return await c.sign_in(phone, CODE)
    except errors.PhoneNumberUnoccupiedError:
        # Telethon's own sign_up refuses to run; the raw call is the protocol's sign-up.
        await c(functions.auth.SignUpRequest(phone_number=phone,
                                             phone_code_hash=sent.phone_code_hash,
                                             first_name=first_name, last_name=''))
        return await c.sign_in(phone, CODE)


async def wait_for(pred, what):
    for _ in range(TIMEOUT * 10):
        if pred():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f'timed out waiting for {what}')


async def main():
    info = json.load(urllib.request.urlopen(f'{HTTP}/v1/mtproto/public-key'))
    rsa.add_key(info['pem'], old=False)
    alice_phone, bob_phone = f'+{PREFIX}1', f'+{PREFIX}2'

    # Bob's account exists already (made over HTTP): MTProto must sign in to the same one.
    req = urllib.request.Request(f'{HTTP}/v1/auth/login', method='POST',
                                 data=json.dumps({'phone': bob_phone, 'first_name': 'Bob'}).encode())
    bob_http_id = json.load(urllib.request.urlopen(req))['user_id']

    a, b, a2 = client(), client(), client(catch_up=True)
    alice = await sign_in(a, alice_phone, 'Alice')
    bob = await sign_in(b, bob_phone, 'Bob')
    check('sign_in', alice.first_name == 'Alice' and bob.first_name == 'Bob', (alice, bob))
    check('same_account_as_http', bob.id == bob_http_id, (bob.id, bob_http_id))
    me = await a.get_me()
    check('get_me', me.id == alice.id and me.phone == alice_phone.lstrip('+'), me)

    # Alice's second device signs in, then goes offline. (A note to self first: Telethon treats
    # a saved state with pts 0 as no state at all and would not catch up.)
    await a.send_message('me', 'note to self')
    alice2 = await sign_in(a2, alice_phone, 'Alice')
    check('second_device_same_account', alice2.id == alice.id)
    a2_seen = []
    a2.add_event_handler(collect(a2_seen, lambda e: e.raw_text), events.NewMessage())
    await a2.disconnect()

    bob_in_alice = (await a(functions.contacts.ResolvePhoneRequest(phone=bob_phone))).users[0]
    alice_in_bob = (await b(functions.contacts.ResolvePhoneRequest(phone=alice_phone))).users[0]
    check('resolve_phone', bob_in_alice.id == bob.id and alice_in_bob.id == alice.id)
    full = await a(functions.users.GetFullUserRequest(bob_in_alice))
    check('get_full_user', full.full_user.id == bob.id)

    b_new, a_new, b_edit, b_del, a_read = [], [], [], [], []
    b.add_event_handler(collect(b_new, lambda e: e.message), events.NewMessage(incoming=True))
    a.add_event_handler(collect(a_new, lambda e: e.message), events.NewMessage(incoming=True))
    b.add_event_handler(collect(b_edit, lambda e: e.message), events.MessageEdited())
    b.add_event_handler(collect(b_del, lambda e: e.deleted_ids), events.MessageDeleted())
    a.add_event_handler(collect(a_read, lambda e: e.max_id), events.MessageRead(inbox=False))

    m1 = await a.send_message(bob_in_alice, 'hello bob')
    m2 = await a.send_message(bob_in_alice, 'second, to be deleted')
    await wait_for(lambda: len(b_new) >= 2, 'Bob to get both messages live')
    check('live_new_message', [m.message for m in b_new] == ['hello bob', 'second, to be deleted'])
    check('sender_resolved', b_new[0].sender_id == alice.id)

    r1 = await b.send_message(alice_in_bob, 'hi alice')
    await wait_for(lambda: len(a_new) >= 1, 'Alice to get the reply live')
    # Ids are per owner: Bob's copy and Alice's copy of the reply have their own.
    check('live_reply', [m.message for m in a_new] == ['hi alice'] and a_new[0].sender_id == bob.id and not a_new[0].out)

    await a.edit_message(bob_in_alice, m1.id, 'hello bob (edited)')
    await wait_for(lambda: b_edit, 'Bob to see the edit live')
    check('live_edit', b_edit[0].message == 'hello bob (edited)')

    await a.delete_messages(bob_in_alice, [m2.id], revoke=True)
    await wait_for(lambda: b_del, 'Bob to see the deletion live')
    check('live_delete', b_del[0] == [b_new[1].id], (b_del, b_new[1].id))

    await b.send_read_acknowledge(alice_in_bob, max_id=b_new[0].id)
    await wait_for(lambda: a_read, 'Alice to see Bob read her message')
    check('live_read', a_read[0] >= m1.id, a_read)

    history = await b.get_messages(alice_in_bob, limit=10)
    texts = [m.message for m in history]
    check('history', texts == ['hi alice', 'hello bob (edited)'], texts)
    dialogs = await b.get_dialogs()
    check('dialogs', [d.id for d in dialogs] == [alice.id], [d.id for d in dialogs])

    # The second device comes back and catches up through updates.getDifference.
    await a2.connect()
    await wait_for(lambda: 'hi alice' in a2_seen, 'the offline device to catch up')
    check('catch_up', 'hi alice' in a2_seen and 'hello bob' in a2_seen, a2_seen)
    h1 = [(m.id, m.message) for m in await a.get_messages(bob_in_alice, limit=10)]
    h2 = [(m.id, m.message) for m in await a2.get_messages(bob_in_alice, limit=10)]
    check('same_history_on_both_devices', h1 == h2 and len(h1) == 2, (h1, h2))
    d1 = [(d.id, d.unread_count) for d in await a.get_dialogs()]
    d2 = [(d.id, d.unread_count) for d in await a2.get_dialogs()]
    check('same_dialogs_on_both_devices', d1 == d2 and sorted(d[0] for d in d1) == sorted([bob.id, alice.id]), (d1, d2))

    # Updates whose TL has no pts (block, unblock, notify settings, filter tags) take pts in the
    # log; their pushes carry a no-op pts-bearing update, so Telethon's own gap check sees no gap
    # at the next message and asks for no difference (docs/events.md, "Updates without pts").
    gaps, diffs = watch_gaps(a)
    gaps2, diffs2 = watch_gaps(a2)
    a2_new = []
    a2.add_event_handler(collect(a2_new, lambda e: e.raw_text), events.NewMessage(incoming=True))
    bob_peer = types.InputPeerUser(bob_in_alice.id, bob_in_alice.access_hash)
    await a(functions.contacts.BlockRequest(id=bob_peer))
    await a(functions.contacts.UnblockRequest(id=bob_peer))
    await a(functions.account.UpdateNotifySettingsRequest(
        peer=types.InputNotifyPeer(peer=bob_peer),
        settings=types.InputPeerNotifySettings(mute_until=2**31 - 1)))
    await a(functions.messages.ToggleDialogFilterTagsRequest(enabled=True))
    await b.send_message(alice_in_bob, 'after the changes')
    await wait_for(lambda: any(m.message == 'after the changes' for m in a_new), 'Alice to get it live')
    await wait_for(lambda: 'after the changes' in a2_new, "Alice's second device to get it live")
    # A gap would wait 0.5 s (POSSIBLE_GAP_TIMEOUT), then ask for the difference.
    await asyncio.sleep(1.5)
    check('no_gap_after_updates_without_pts', not gaps and not diffs and not gaps2 and not diffs2,
          (gaps, diffs, gaps2, diffs2))

    await a.log_out()
    check('log_out', not await a.is_user_authorized())
    print('SESSION', StringSession.save(b.session), flush=True)
    for c in (b, a2):
        await c.disconnect()
    print('E2E OK', TRANSPORT, flush=True)


async def reconnect(saved):
    info = json.load(urllib.request.urlopen(f'{HTTP}/v1/mtproto/public-key'))
    rsa.add_key(info['pem'], old=False)
    c = TelegramClient(StringSession(saved), api_id=1, api_hash='0' * 32,
                       connection=CONNECTIONS[TRANSPORT], timeout=TIMEOUT)
    await c.connect()
    check('still_authorized', await c.is_user_authorized())
    me = await c.get_me()
    check('same_user_after_reconnect', me.first_name == 'Bob', me)
    dialogs = await c.get_dialogs()
    check('dialogs_after_reconnect', len(dialogs) == 1, dialogs)
    await c.disconnect()
    print('RECONNECT OK', flush=True)


if PREFIX == 'reconnect':
    asyncio.run(reconnect(sys.argv[6]))
else:
    asyncio.run(main())
