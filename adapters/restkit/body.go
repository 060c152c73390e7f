package restkit

import "io"

// drainBytes is how much of an unread answer Close reads first, so the connection can be
// reused; an answer is never read without a bound.
const drainBytes = 64 << 10

// Close drains a little of body and closes it (deferred right after a call's answer).
func Close(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, drainBytes))
	_ = body.Close()
}

// ReadAtMost reads r to its end, up to max bytes. tooLarge: r holds more than max, and only the
// first max+1 bytes were read (the caller's answer is then unreadable). Errors: the read's.
func ReadAtMost(r io.Reader, max int64) (body []byte, tooLarge bool, err error) {
	body, err = io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, false, err
	}
	return body, int64(len(body)) > max, nil
}
