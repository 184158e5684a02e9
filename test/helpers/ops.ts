// A SERVICE_OPS user's bearer token for tests of ops endpoints.
import { hashPassword } from '../../src/auth/passwords.ts';
import type { TestServer } from './server.ts';

let counter = 0;

export async function operatorToken(t: TestServer): Promise<string> {
  return (await newOperator(t)).token;
}

/** A new SERVICE_OPS user: the email and password it signs in with, and a token already issued. */
export async function newOperator(t: TestServer): Promise<{ email: string; password: string; token: string }> {
  // Made through the services, so any test server can have operators without being started
  // with CORRIDOR_OPS_EMAIL, and each test file can have as many as it needs.
  const { organizations, users } = t.server.services;
  const org = (await organizations.operator()) ?? (await organizations.create('Corridor operations', { kind: 'OPERATOR' }));
  const email = `ops${++counter}-${Math.random().toString(36).slice(2, 8)}@corridor.test`;
  const password = 'operator password 1';
  await users.create({ organizationId: org.id, email, fullName: 'Service operator', passwordHash: await hashPassword(password), roles: ['SERVICE_OPS'] });
  const res = await t.request('POST', '/v1/auth/token', { body: { email, password } });
  if (res.status !== 200) throw new Error(`operator sign-in failed: ${res.status} ${res.text}`);
  return { email, password, token: res.body.accessToken as string };
}
