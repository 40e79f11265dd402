<?php
/**
 * Class Test_Reading_Time
 *
 * @package Reading_Time
 */

/**
 * Reading time estimates and the shortcode.
 */
class Test_Reading_Time extends WP_UnitTestCase {

	function test_short_text_takes_one_minute() {
		$this->assertSame( 1, reading_time_minutes( 'A handful of words.' ) );
	}

	function test_minutes_round_up() {
		$this->assertSame( 2, reading_time_minutes( str_repeat( 'word ', 201 ) ) );
	}

	function test_option_changes_the_pace() {
		update_option( 'reading_time_wpm', 100 );
		$this->assertSame( 3, reading_time_minutes( str_repeat( 'word ', 250 ) ) );
	}

	function test_shortcode_reads_the_current_post() {
		$post_id = $this->factory->post->create( array( 'post_content' => str_repeat( 'word ', 450 ) ) );
		$GLOBALS['post'] = get_post( $post_id );
		$this->assertSame( '3 min read', do_shortcode( '[reading_time]' ) );
	}

	function test_empty_post_takes_no_time() {
		$this->assertSame( 0, reading_time_minutes( '<p>[gallery]</p>' ) );
	}
}
