"""Two-step verification with unpatched Telethon against a ptslog server (tests/integration/mtproto.rs).

An account sets a password with `edit_2fa`; a new device's right code then raises
SessionPasswordNeededError and leaves it signed out, a wrong password raises
PasswordHashInvalidError, the right one signs it in (auth.checkPassword); the password is changed
with the current one, then removed, and a third device signs in with the code alone. Prints one
`CHECK <name>` line per passed check and `E2E OK 2fa` at the end; any failure raises.

usage: telethon_2fa.py HTTP_BASE MTPROTO_HOST MTPROTO_PORT PHONE
"""

import asyncio
import json
import sys
import urllib.request

from telethon import TelegramClient, errors, functions, types
from telethon.crypto import rsa
from telethon.network import ConnectionTcpAbridged
from telethon.sessions import MemorySession

HTTP, HOST, PORT, PHONE = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
CODE = '12345'


def check(name, ok, detail=''):
    if not ok:
        raise AssertionError(f'{name} failed {detail}')
    print(f'CHECK {name}', flush=True)


def client():
    session = MemorySession()
    session.set_dc(2, HOST, PORT)
    c = TelegramClient(session, api_id=1, api_hash='0' * 32, connection=ConnectionTcpAbridged,
                       receive_updates=False, request_retries=1, connection_retries=2, timeout=30)
    # A FLOOD_WAIT must surface, not be slept through.
    c.flood_sleep_threshold = 0
    return c


async def code_sign_in(c):
    await c.connect()
    sent = await c.send_code_request(PHONE)
    try:
        return await c.sign_in(PHONE, CODE)
    except errors.PhoneNumberUnoccupiedError:
        await c(functions.auth.SignUpRequest(phone_number=PHONE, phone_code_hash=sent.phone_code_hash,
                                             first_name='Tess', last_name=''))
        return await c.sign_in(PHONE, CODE)


async def main():
    info = json.load(urllib.request.urlopen(f'{HTTP}/v1/mtproto/public-key'))
    rsa.add_key(info['pem'], old=False)

    # A key that has not given a code for an account with a password gets nothing.
    z = client()
    await z.connect()
    for request in (functions.account.GetPasswordRequest(),
                    functions.auth.CheckPasswordRequest(types.InputCheckPasswordSRP(1, b'\x01' * 256, b'\x00' * 32))):
        try:
            await z(request)
            raise AssertionError(f'{request} answered before a code')
        except errors.AuthKeyUnregisteredError:
            pass
    check('nothing_before_code', True)
    await z.disconnect()

    a = client()
    me = await code_sign_in(a)
    p0 = await a(functions.account.GetPasswordRequest())
    check('no_password', not p0.has_password)
    check('set', await a.edit_2fa(new_password='pw1', hint='h'))
    pwd = await a(functions.account.GetPasswordRequest())
    check('has_password', pwd.has_password and pwd.hint == 'h', pwd)

    b = client()
    await b.connect()
    await b.send_code_request(PHONE)
    try:
        await b.sign_in(PHONE, CODE)
        raise AssertionError('the code alone signed an account with a password in')
    except errors.SessionPasswordNeededError:
        check('session_password_needed', not await b.is_user_authorized())
    try:
        await b.sign_in(password='wrong')
        raise AssertionError('a wrong password was accepted')
    except errors.PasswordHashInvalidError:
        check('wrong_password', not await b.is_user_authorized())
    user = await b.sign_in(password='pw1')
    check('password_sign_in', user.id == me.id and await b.is_user_authorized(), user)

    try:
        await b.edit_2fa(current_password='wrong', new_password='pw3')
        raise AssertionError('changed without the current password')
    except errors.PasswordHashInvalidError:
        check('change_needs_current', True)
    check('change', await b.edit_2fa(current_password='pw1', new_password='pw2', hint='h2'))
    pwd = await a(functions.account.GetPasswordRequest())
    check('changed_hint', pwd.has_password and pwd.hint == 'h2', pwd)
    check('remove', await a.edit_2fa(current_password='pw2', new_password=None))
    check('removed', not (await a(functions.account.GetPasswordRequest())).has_password)

    c = client()
    again = await code_sign_in(c)
    check('sign_in_without_password', again.id == me.id)
    for x in (a, b, c):
        await x.disconnect()
    print('E2E OK 2fa', flush=True)


asyncio.run(main())
