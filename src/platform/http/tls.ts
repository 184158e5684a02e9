// TLS material: the configured certificate, or a self-signed one generated once into the data dir.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import { generate } from 'selfsigned';
import { ConfigError } from '../config.ts';

export interface TlsMaterial {
  key: string;
  cert: string;
  /** Where the certificate lives, so first start can tell the user what to trust. */
  certPath: string;
  generated: boolean;
}

export async function loadTls(options: { certPath: string | null; keyPath: string | null; dataDir: string; host: string }): Promise<TlsMaterial> {
  if (options.certPath && options.keyPath) {
    const cert = readPem('CORRIDOR_TLS_CERT', options.certPath);
    const key = readPem('CORRIDOR_TLS_KEY', options.keyPath);
    checkPair(cert, key);
    return { cert, key, certPath: options.certPath, generated: false };
  }
  const dir = path.join(options.dataDir, 'tls');
  const certPath = path.join(dir, 'cert.pem');
  const keyPath = path.join(dir, 'key.pem');
  if (fs.existsSync(certPath) && fs.existsSync(keyPath)) {
    return { cert: fs.readFileSync(certPath, 'utf8'), key: fs.readFileSync(keyPath, 'utf8'), certPath, generated: false };
  }
  const altNames: Array<{ type: 2 | 7; value?: string; ip?: string }> = [
    { type: 2, value: 'localhost' },
    { type: 7, ip: '127.0.0.1' },
    { type: 7, ip: '::1' },
  ];
  if (net.isIP(options.host) && !['127.0.0.1', '::1', '0.0.0.0', '::'].includes(options.host)) altNames.push({ type: 7, ip: options.host });
  else if (!net.isIP(options.host) && options.host !== 'localhost') altNames.push({ type: 2, value: options.host });
  const notAfterDate = new Date(Date.now() + 825 * 24 * 3600 * 1000);
  const pems = await generate([{ name: 'commonName', value: 'Corridor sandbox (self-signed)' }], {
    keySize: 2048,
    algorithm: 'sha256',
    notAfterDate,
    extensions: [{ name: 'subjectAltName', altNames }],
  } as never);
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(keyPath, pems.private, { mode: 0o600 });
    fs.writeFileSync(certPath, pems.cert);
  } catch (err) {
    throw new ConfigError([`CORRIDOR_DATA_DIR: cannot write the generated certificate to ${dir} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`]);
  }
  return { key: pems.private, cert: pems.cert, certPath, generated: true };
}

function readPem(variable: string, file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError([`${variable}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`]);
  }
}

/** A configured certificate and key must parse and belong together, or the process stops here with one line each. */
function checkPair(cert: string, key: string): void {
  const problems: string[] = [];
  let certificate: crypto.X509Certificate | null = null;
  let privateKey: crypto.KeyObject | null = null;
  try {
    certificate = new crypto.X509Certificate(cert);
  } catch {
    problems.push('CORRIDOR_TLS_CERT: is not a PEM certificate');
  }
  try {
    privateKey = crypto.createPrivateKey(key);
  } catch {
    problems.push('CORRIDOR_TLS_KEY: is not an unencrypted PEM private key');
  }
  if (certificate && privateKey && !certificate.checkPrivateKey(privateKey)) {
    problems.push('CORRIDOR_TLS_KEY: does not belong to the certificate in CORRIDOR_TLS_CERT');
  }
  if (problems.length) throw new ConfigError(problems);
}
