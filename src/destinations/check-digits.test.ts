import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  abaCheckDigit,
  base32Decode,
  base32Encode,
  cbuCheckDigits,
  crc16CcittFalse,
  crc16Xmodem,
  eip55Checksum,
  nubanCheckDigit,
  stellarAccountId,
  stellarAccountKey,
} from './check-digits.ts';

const ascii = (text: string) => new TextEncoder().encode(text);
const hex = (text: string) => Uint8Array.from(Buffer.from(text, 'hex'));
const abaValid = (routing: string) => abaCheckDigit(routing.slice(0, 8)) === routing[8];

test('ABA: published routing numbers carry their 3-7-1 check digit, altered ones do not', () => {
  // JPMorgan Chase NY, Federal Reserve Bank of Boston, Bank of America NY and CA, Wells Fargo CA.
  for (const routing of ['021000021', '011000015', '026009593', '121000358', '121042882']) assert.ok(abaValid(routing), routing);
  assert.equal(abaCheckDigit('02100002'), '1');
  // One digit changed, and two neighbours swapped (the 3-7-1 weights catch both).
  for (const routing of ['021000022', '021000012', '120000021']) assert.ok(!abaValid(routing), routing);
  assert.throws(() => abaCheckDigit('0210000'), RangeError);
  assert.throws(() => abaCheckDigit('0210000A'), RangeError);
});

test('NUBAN: the CBN worked example (bank 011, serial 000001457, check digit 9), and a wrong bank code fails', () => {
  assert.equal(nubanCheckDigit('011', '000001457'), '9');
  assert.notEqual(nubanCheckDigit('058', '000001457'), '9');
  assert.throws(() => nubanCheckDigit('11', '000001457'), RangeError);
});

test('CBU: published CBUs carry both check digits, an altered one does not', () => {
  const valid = (cbu: string) => {
    const expected = cbuCheckDigits(cbu.slice(0, 7), cbu.slice(8, 21));
    return expected.bank === cbu[7] && expected.account === cbu[21];
  };
  // Banco de la Nación Argentina and Banco Macro examples.
  assert.ok(valid('0110599520000001235579'));
  assert.ok(valid('2850590940090418135201'));
  assert.deepEqual(cbuCheckDigits('0110599', '2000000123557'), { bank: '5', account: '9' });
  assert.ok(!valid('2850590940090418135202'), 'account check digit altered');
  assert.ok(!valid('2850591940090418135201'), 'bank block altered');
});

test('EIP-55: the reference vectors of the EIP, from any letter case', () => {
  const vectors = [
    // all caps, all lower, and mixed, as listed in EIP-55
    '0x52908400098527886E0F7030069857D2E4169EE7',
    '0x8617E340B3D01FA5F11F306F4090FD50E238070D',
    '0xde709f2102306220921060314715629080e2fb77',
    '0x27b1fdb04752bbc536007a920d24acb045561c26',
    '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
    '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
    '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB',
    '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb',
  ];
  for (const address of vectors) {
    assert.equal(eip55Checksum(address), address);
    assert.equal(eip55Checksum(address.toLowerCase()), address);
    assert.equal(eip55Checksum(`0x${address.slice(2).toUpperCase()}`), address);
  }
  // One letter's case flipped no longer matches its checksum.
  assert.notEqual(eip55Checksum('0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'), '0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed');
  assert.throws(() => eip55Checksum('0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe'), RangeError);
  assert.throws(() => eip55Checksum('5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'), RangeError);
});

test('CRC-16: the catalogue check values of "123456789" for XMODEM (0x31C3) and CCITT-FALSE (0x29B1)', () => {
  assert.equal(crc16Xmodem(ascii('123456789')), 0x31c3);
  assert.equal(crc16CcittFalse(ascii('123456789')), 0x29b1);
  assert.equal(crc16Xmodem(new Uint8Array()), 0);
  assert.equal(crc16CcittFalse(new Uint8Array()), 0xffff);
  // The BR Code example of the brazilian-utils docs ends in its CRC (6304FC66).
  const brCode = '00020101021226480014br.gov.bcb.pix2526pix.example.com/qr/v2/12345204000053039865802BR5913Fulano de Tal6008Brasilia62070503***6304';
  assert.equal(crc16CcittFalse(ascii(brCode)), 0xfc66);
});

test('base32: the RFC 4648 test vectors (unpadded), both ways; non-canonical text is refused', () => {
  const vectors: [string, string][] = [['', ''], ['f', 'MY'], ['fo', 'MZXQ'], ['foo', 'MZXW6'], ['foob', 'MZXW6YQ'], ['fooba', 'MZXW6YTB'], ['foobar', 'MZXW6YTBOI']];
  for (const [plain, encoded] of vectors) {
    assert.equal(base32Encode(ascii(plain)), encoded);
    assert.deepEqual(base32Decode(encoded), ascii(plain));
  }
  assert.equal(base32Decode('MZ'), null, 'non-zero fill bits');
  assert.equal(base32Decode('MYA'), null, 'a dangling character (its fill bits are zero)');
  assert.equal(base32Decode('mzxw6'), null, 'outside the alphabet');
  assert.equal(base32Decode('MZXW1'), null, 'outside the alphabet');
  assert.equal(base32Encode(hex('ffffffffff'), '0123456789ABCDEFGHJKMNPQRSTVWXYZ'), 'ZZZZZZZZ');
});

test('Stellar StrKey: published account ids encode and decode; altered, truncated and seed keys are refused', () => {
  assert.equal(stellarAccountId(new Uint8Array(32)), 'GAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAWHF');
  const pairs: [string, string][] = [
    // The account of the SEP-23 examples, and an ed25519 key from SDK test vectors.
    ['3f0c34bf93ad0d9971d04ccc90f705511c838aad9734a4a2fb0d7a03fc7fe89a', 'GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ'],
    ['7b07983499c93f4eb256d7f6a42acf13ef098b20022e904f6c82f13805166c9f', 'GB5QPGBUTHET6TVSK3L7NJBKZ4J66CMLEABC5ECPNSBPCOAFCZWJ6KSN'],
  ];
  for (const [key, account] of pairs) {
    assert.equal(stellarAccountId(hex(key)), account);
    assert.deepEqual(stellarAccountKey(account), hex(key));
  }
  const good = 'GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ';
  assert.equal(stellarAccountKey(`${good.slice(0, 55)}A`), null, 'checksum altered');
  assert.equal(stellarAccountKey(`GB${good.slice(2)}`), null, 'key altered');
  assert.equal(stellarAccountKey(good.slice(0, 55)), null, 'truncated');
  assert.equal(stellarAccountKey(good.toLowerCase()), null, 'lower case');
  assert.equal(stellarAccountKey('SBGWKM3CD4IL47QN6X54N6Y33T3JDNVI6AIJ6CD5IM47HG3IG4O36XCU'), null, 'a secret seed, not an account');
  assert.equal(stellarAccountKey('MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUAAAAAAAAAAAACJUQ'), null, 'a muxed account');
  assert.throws(() => stellarAccountId(new Uint8Array(31)), RangeError);
});
