"""A second real client: Kurigram (a maintained Pyrogram fork) against a ptslog server
(tests/integration/mtproto.rs). Two new accounts sign up and in with the development code, resolve
each other by phone, and exchange messages that arrive live through Kurigram's own handlers.
Prints `CHECK <name>` per passed check and `E2E OK kurigram`; any failure raises.

usage: kurigram_e2e.py HTTP_BASE MTPROTO_HOST MTPROTO_PORT PHONE_PREFIX
"""

import asyncio

from pyrogram import filters, raw
from pyrogram.handlers import MessageHandler

from kurigram_common import PREFIX, check, client, sign_in, trust_server_key, wait_for


async def main():
    trust_server_key()
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
