/**
 * Audio files for the audio routes' tests, made with FFmpeg (which the routes need anyway): a few seconds of a
 * spoken-like signal (a tone whose pitch and loudness move) in the containers clients send.
 */
import {execa} from 'execa'
import {join} from 'node:path'

/** Output options per container, as a client's recorder would write it. */
export const AUDIO_CONTAINERS: Record<string, string[]> = {
  flac: ['-c:a', 'flac'],
  m4a: ['-c:a', 'aac', '-b:a', '64k'],
  mp3: ['-c:a', 'libmp3lame', '-b:a', '64k'],
  ogg: ['-c:a', 'libopus', '-b:a', '32k'],
  wav: ['-c:a', 'pcm_s16le'],
  webm: ['-c:a', 'libopus', '-b:a', '32k'],
}

/** Writes `seconds` of test audio at 44.1 kHz stereo in `container` and returns its path. */
export async function writeTestAudio(directory: string, container: string, seconds: number, name = `speech-${seconds}s`): Promise<string> {
  const path = join(directory, `${name}.${container}`)
  const signal = `aevalsrc=0.4*sin(2*PI*(220+80*sin(2*PI*0.7*t))*t)*(0.6+0.4*sin(2*PI*3*t)):s=44100:d=${seconds}`
  await execa('ffmpeg', ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', signal, '-ac', '2', ...AUDIO_CONTAINERS[container], path])
  return path
}
