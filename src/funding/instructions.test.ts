import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isValidBIC, isValidIBAN } from 'ibantools';
import { clabe } from 'clabe-validator';
import { getAddressInfo, validate as validateBitcoin } from 'bitcoin-address-validation';
import { getPixPayloadInfo, isValidPixKey, isValidPixPayload } from '@brazilian-utils/brazilian-utils';
import type { Rail } from '../providers/adapter.ts';
import { cbu, generateInstructions, nuban, virtualClabe } from './instructions.ts';
import type { CryptoInstructions, FiatInstructions } from './instructions.ts';
import { eip55Checksum } from '../destinations/check-digits.ts';
// Generated coordinates must pass the very checks a saved destination of the same kind must pass.
import * as ids from '../destinations/identifiers.ts';

const fiat = (country: string, currency: string, method: string, amount = '1250.75') =>
  generateInstructions({ rail: { type: 'FIAT', country, currency, method } as Rail, exactAmount: amount, beneficiaryName: 'Sandbox Collections', env: 'sandbox' });
const crypto = (blockchain: string, asset: string, env: 'sandbox' | 'production' = 'sandbox') =>
  generateInstructions({ rail: { type: 'CRYPTO', blockchain, asset }, exactAmount: '250.000000', beneficiaryName: 'x', env });

test('ACH instructions: checksummed routing number, a virtual account, the exact amount and a short reference', () => {
  const { instructions, reference } = fiat('US', 'USD', 'ACH');
  const i = instructions as FiatInstructions;
  assert.equal(i.type, 'FIAT');
  assert.deepEqual(i.rail, { type: 'FIAT', country: 'US', currency: 'USD', method: 'ACH' });
  assert.equal(i.exactAmount, '1250.75');
  assert.equal(i.currency, 'USD');
  assert.equal(i.beneficiary.name, 'Sandbox Collections');
  assert.equal(ids.abaRoutingNumber(i.routingNumber!), null, i.routingNumber);
  assert.match(i.accountNumber!, /^\d{8,17}$/);
  assert.equal(i.accountType, 'CHECKING');
  assert.equal(i.reference, reference);
  assert.match(i.reference, /^CRD[0-9A-Z]{16}$/);
  assert.ok(i.reference.length <= 35);
});

test('SEPA instructions carry a virtual IBAN of the rail country that passes its check digits, and a valid BIC', () => {
  for (const country of ['DE', 'FR', 'ES', 'NL', 'IT']) {
    const i = fiat(country, 'EUR', 'SEPA').instructions as FiatInstructions;
    assert.ok(isValidIBAN(i.iban!), `${country}: ${i.iban}`);
    assert.equal(i.iban!.slice(0, 2), country);
    assert.ok(isValidBIC(i.bic!), i.bic);
    assert.equal(i.currency, 'EUR');
    assert.equal(i.routingNumber, undefined);
  }
});

test('SWIFT instructions use an IBAN where the country has one, an account number elsewhere', () => {
  const ae = fiat('AE', 'AED', 'SWIFT').instructions as FiatInstructions;
  assert.ok(isValidIBAN(ae.iban!), ae.iban);
  assert.ok(isValidBIC(ae.bic!));
  const sg = fiat('SG', 'SGD', 'SWIFT').instructions as FiatInstructions;
  assert.equal(sg.iban, undefined);
  assert.match(sg.accountNumber!, /^\d+$/);
  assert.ok(isValidBIC(sg.bic!));
});

test('SPEI instructions carry a unique CLABE with a valid check digit', () => {
  const i = fiat('MX', 'MXN', 'SPEI').instructions as FiatInstructions;
  const check = clabe.validate(i.clabe!);
  assert.ok(check.ok, check.message);
  assert.equal(check.tag, 'STP');
  assert.notEqual(virtualClabe(), virtualClabe());
});

test('PIX instructions carry a fresh EVP key and a valid copia-e-cola with the exact amount and the reference', () => {
  const i = fiat('BR', 'BRL', 'PIX', '5400.10').instructions as FiatInstructions;
  assert.equal(i.pixKeyType, 'EVP');
  assert.ok(isValidPixKey(i.pixKey!), i.pixKey);
  assert.ok(isValidPixPayload(i.pixCopiaECola!), i.pixCopiaECola);
  const info = getPixPayloadInfo(i.pixCopiaECola!) as unknown as { key: string; amount: number; txid: string; pointOfInitiation: string };
  assert.equal(info.key, i.pixKey);
  assert.equal(info.txid, i.reference);
  assert.equal(String(info.amount), '5400.1');
  assert.equal(info.pointOfInitiation, 'dynamic');
  assert.ok(i.pixCopiaECola!.includes('54075400.10'), 'the amount is written exactly, from the decimal string');
});

test('GB LOCAL instructions carry a sort code and an 8-digit account number', () => {
  const i = fiat('GB', 'GBP', 'LOCAL').instructions as FiatInstructions;
  assert.match(i.sortCode!, /^\d{6}$/);
  assert.match(i.accountNumber!, /^\d{8}$/);
});

test('other LOCAL rails: NUBAN and CBU carry valid check digits', () => {
  const ng = fiat('NG', 'NGN', 'LOCAL').instructions as FiatInstructions;
  assert.match(ng.accountNumber!, /^\d{10}$/);
  assert.equal(ids.nubanProblem(ng.bankCode!, ng.accountNumber!), null);
  assert.equal(ids.nubanProblem('058', nuban('058')), null);
  const ar = fiat('AR', 'ARS', 'LOCAL').instructions as FiatInstructions;
  assert.equal(ids.cbu(ar.cbu!), null, ar.cbu);
  assert.equal(ids.cbu(cbu()), null);
  const ke = fiat('KE', 'KES', 'LOCAL').instructions as FiatInstructions;
  assert.equal(ke.mobileNetwork, 'MPESA');
  assert.match(ke.paybillNumber!, /^\d{5,7}$/);
});

test('ETHEREUM USDC instructions carry a fresh EIP-55 checksummed deposit address and no memo', () => {
  const { instructions, depositKey } = crypto('ETHEREUM', 'USDC');
  const i = instructions as CryptoInstructions;
  assert.equal(i.type, 'CRYPTO');
  assert.equal(i.blockchain, 'ETHEREUM');
  assert.equal(i.asset, 'USDC');
  assert.equal(i.exactAmount, '250.000000');
  assert.match(i.depositAddress, /^0x[0-9a-fA-F]{40}$/);
  assert.equal(eip55Checksum(i.depositAddress), i.depositAddress);
  assert.notEqual(i.depositAddress, i.depositAddress.toLowerCase());
  assert.equal(i.memo, undefined);
  assert.equal(depositKey, `EVM:${i.depositAddress.toLowerCase()}`);
});

test('BITCOIN instructions carry a bech32 P2WPKH address: testnet in the sandbox, mainnet in production', () => {
  const sandbox = crypto('BITCOIN', 'BTC').instructions as CryptoInstructions;
  assert.ok(validateBitcoin(sandbox.depositAddress), sandbox.depositAddress);
  const info = getAddressInfo(sandbox.depositAddress);
  assert.equal(info.type, 'p2wpkh');
  assert.equal(info.network, 'testnet');
  assert.ok(sandbox.depositAddress.startsWith('tb1q'));
  const production = crypto('BITCOIN', 'BTC', 'production').instructions as CryptoInstructions;
  assert.ok(validateBitcoin(production.depositAddress, 'mainnet' as never), production.depositAddress);
  assert.ok(production.depositAddress.startsWith('bc1q'));
  assert.equal(production.network, 'mainnet');
});

test('STELLAR instructions share one deposit account and tell transfers apart by a memo', () => {
  const a = crypto('STELLAR', 'USDC').instructions as CryptoInstructions;
  const b = crypto('STELLAR', 'USDC').instructions as CryptoInstructions;
  assert.equal(ids.stellarAccount(a.depositAddress), null, a.depositAddress);
  assert.equal(a.depositAddress, b.depositAddress);
  assert.equal(a.memoType, 'ID');
  assert.match(a.memo!, /^\d{1,20}$/);
  assert.ok(BigInt(a.memo!) < 2n ** 64n);
  assert.notEqual(a.memo, b.memo);
});

test('two sessions on the same rail never share a reference or deposit coordinates', () => {
  for (const make of [() => fiat('US', 'USD', 'ACH'), () => fiat('DE', 'EUR', 'SEPA'), () => crypto('POLYGON', 'USDC'), () => crypto('STELLAR', 'USDC')]) {
    const a = make();
    const b = make();
    assert.notEqual(a.reference, b.reference);
    assert.notEqual(a.depositKey, b.depositKey);
  }
});

test('a chain the service cannot collect on is refused', () => {
  assert.throws(() => crypto('DOGECOIN', 'DOGE'), /not supported/);
});
