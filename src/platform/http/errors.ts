// Every failure leaves the API as {code, message} (plus details for validation), never wrapped.

export interface FieldProblem {
  /** Dotted path of the offending field, e.g. "details.iban" or "paymentReferences.originalMessageId". */
  path: string;
  message: string;
}

export class ApiError extends Error {
  readonly statusCode: number;
  readonly code: string;
  readonly details: FieldProblem[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(statusCode: number, code: string, message: string, options: { details?: FieldProblem[]; headers?: Record<string, string> } = {}) {
    super(message);
    this.statusCode = statusCode;
    this.code = code;
    this.details = options.details;
    this.headers = options.headers;
  }

  toBody(): { code: string; message: string; details?: FieldProblem[] } {
    return this.details ? { code: this.code, message: this.message, details: this.details } : { code: this.code, message: this.message };
  }
}

export const notFound = (what = 'Resource') => new ApiError(404, 'not_found', `${what} not found`);

export const validationError = (details: FieldProblem[], message?: string) =>
  new ApiError(422, 'validation_error', message ?? details.map((d) => `${d.path || 'body'}: ${d.message}`).join('; '), { details });

export const conflict = (code: string, message: string) => new ApiError(409, code, message);

export const unprocessable = (code: string, message: string) => new ApiError(422, code, message);

export const forbidden = (code: string, message: string) => new ApiError(403, code, message);
